/**
 * The last sealed id, `max(last_id)` over audit_checkpoints, read by an index instead of a scan of
 * every checkpoint, as SQLite's 0030. The sealer reads it twice a round (the newest checkpoint,
 * and the append's guard that a seal starts right after it), and under load a round comes every
 * 100 ms with a checkpoint each (docs/decisions/0011): with 200,000 checkpoints (74 MB, hours of
 * a busy ledger) each read was a parallel scan of ~60-85 ms, growing with the ledger's age.
 */
export default {
  version: 30,
  name: 'checkpoints-by-last-id',
  sql: `CREATE INDEX audit_checkpoints_by_last_id ON audit_checkpoints (last_id);`,
};
