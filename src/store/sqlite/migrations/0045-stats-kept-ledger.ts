/**
 * stats()' ledger counts now count `job:timed_out` rows by who judged them beside the job starts
 * (docs/decisions/0037-run-time-limit.md, "The sweep's loose ends"; `baton_jobs_timed_out_total`).
 * A kept row of the old counts (`audit_events`, starts only) would leave out the timed-out rows
 * below its `through`, so the new counts are kept under a name of their own, `ledger`, and the old
 * row is dropped; a process still on the old code may write it again, and no new one reads it.
 * SQLite cannot change a CHECK in place: the table is copied under the new one, its other rows kept.
 */
export default {
  version: 45,
  name: 'stats-kept-ledger',
  sql: `
CREATE TABLE stats_kept_next (
  tbl TEXT PRIMARY KEY CHECK (tbl IN ('jobs', 'claims', 'audit_events', 'ledger', 'tasks')),
  through INTEGER NOT NULL,
  mark INTEGER NOT NULL,
  seen INTEGER NOT NULL,
  counts TEXT NOT NULL,
  mins TEXT NOT NULL,
  pending TEXT NOT NULL
);
INSERT INTO stats_kept_next SELECT tbl, through, mark, seen, counts, mins, pending FROM stats_kept
  WHERE tbl <> 'audit_events';
DROP TABLE stats_kept;
ALTER TABLE stats_kept_next RENAME TO stats_kept;
`,
};
