/**
 * A host disabled by its own `baton up` draining (docs/decisions/0034-graceful-drain.md), told
 * from one an operator disabled: `draining` is true only while `enabled` is false because of a
 * drain, so the next `baton up` on the host enables it again and an operator's disable survives.
 */
export default {
  version: 32,
  name: 'host-draining',
  sql: `
ALTER TABLE hosts ADD COLUMN draining boolean NOT NULL DEFAULT false;
`,
};
