/**
 * stats()' ledger counts now count `job:timed_out` rows by who judged them beside the job starts
 * (docs/decisions/0037-run-time-limit.md, "The sweep's loose ends"; `baton_jobs_timed_out_total`).
 * A kept row of the old counts (`audit_events`, starts only) would leave out the timed-out rows
 * below its `through`, so the new counts are kept under a name of their own, `ledger`, and the old
 * row is dropped; a process still on the old code may write it again, and no new one reads it.
 */
export default {
  version: 45,
  name: 'stats-kept-ledger',
  sql: `
ALTER TABLE stats_kept DROP CONSTRAINT stats_kept_tbl_check;
ALTER TABLE stats_kept ADD CONSTRAINT stats_kept_tbl_check
  CHECK (tbl IN ('jobs', 'claims', 'audit_events', 'ledger', 'tasks'));
DELETE FROM stats_kept WHERE tbl = 'audit_events';
`,
};
