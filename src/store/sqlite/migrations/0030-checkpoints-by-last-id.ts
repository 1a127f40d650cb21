/**
 * The last sealed id, `max(last_id)` over audit_checkpoints, read by an index (one probe) instead
 * of a scan of every checkpoint, as PostgreSQL's 0030. Every seal reads it: with a checkpoint per
 * busy round (docs/decisions/0011) the table grows by thousands of rows an hour under load.
 */
export default {
  version: 30,
  name: 'checkpoints-by-last-id',
  sql: `CREATE INDEX audit_checkpoints_by_last_id ON audit_checkpoints (last_id);`,
};
