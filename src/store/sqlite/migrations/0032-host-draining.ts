/**
 * A host disabled by its own `baton up` draining (docs/decisions/0034-graceful-drain.md), told
 * from one an operator disabled: `draining` is 1 only while `enabled` is 0 because of a drain,
 * so the next `baton up` on the host enables it again and an operator's disable survives.
 */
export default {
  version: 32,
  name: 'host-draining',
  sql: `
ALTER TABLE hosts ADD COLUMN draining INTEGER NOT NULL DEFAULT 0 CHECK (draining IN (0, 1));
`,
};
