/** Hand-off at enqueue (docs/decisions/0024), as PostgreSQL's 0026. */
export default {
  version: 23,
  name: 'hand-off',
  sql: `
ALTER TABLE sessions ADD COLUMN wait_until INTEGER;
ALTER TABLE sessions ADD COLUMN wait_host TEXT CHECK (wait_host IS NULL OR length(wait_host) BETWEEN 1 AND 100);
ALTER TABLE sessions ADD COLUMN wait_start INTEGER NOT NULL DEFAULT 0 CHECK (wait_start IN (0, 1));
ALTER TABLE sessions ADD COLUMN handed_job INTEGER;
CREATE INDEX sessions_waiting ON sessions (wait_until) WHERE wait_until IS NOT NULL;
`,
};
