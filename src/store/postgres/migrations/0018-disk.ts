/**
 * Free space where each host keeps its state and job logs (issue 14, item 4): reported with the
 * runner's heartbeat, shown (and flagged when low) by `baton hosts`. Null until a runner said.
 */
export default {
  version: 18,
  name: 'disk',
  sql: `
ALTER TABLE hosts ADD COLUMN disk_free_mb integer CHECK (disk_free_mb IS NULL OR disk_free_mb >= 0);
ALTER TABLE hosts ADD COLUMN disk_total_mb integer CHECK (disk_total_mb IS NULL OR disk_total_mb >= 0);
`,
};
