/**
 * stats() after job retention and in a new process (docs/decisions/0040, as PostgreSQL's 0038). Each retention batch
 * that removes jobs logs them in `stats_pruned` (one row per status: how many, the lowest and the
 * highest id) and numbers the batch in `stats_retention.seq`; a store subtracts a batch it has not
 * seen from its kept counts instead of counting the jobs again. Retention sets `quiet` in its own
 * write transaction and clears it before commit (one writer: no other connection sees it set), so
 * its deletes leave the jobs mark; every other delete of jobs still moves it. `dropped` is the
 * newest batch pruned out of the log: a store that saw less counts again from the first row.
 * `stats_kept` persists a store's running counts of each table (stats-kept.ts) for stores that
 * have none yet, which start from them and read only past them.
 */
export default {
  version: 38,
  name: 'stats-retention-log',
  sql: `
CREATE TABLE stats_retention (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  quiet INTEGER NOT NULL DEFAULT 0,
  seq INTEGER NOT NULL DEFAULT 0,
  dropped INTEGER NOT NULL DEFAULT 0
);
INSERT INTO stats_retention (id) VALUES (1);
CREATE TABLE stats_pruned (
  seq INTEGER NOT NULL,
  status TEXT NOT NULL,
  removed INTEGER NOT NULL,
  first_id INTEGER NOT NULL,
  last_id INTEGER NOT NULL,
  PRIMARY KEY (seq, status)
);
CREATE TABLE stats_kept (
  tbl TEXT PRIMARY KEY CHECK (tbl IN ('jobs', 'claims', 'audit_events', 'tasks')),
  through INTEGER NOT NULL,
  mark INTEGER NOT NULL,
  seen INTEGER NOT NULL,
  counts TEXT NOT NULL,
  mins TEXT NOT NULL,
  pending TEXT NOT NULL
);
DROP TRIGGER jobs_deleted;
CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs WHEN (SELECT quiet FROM stats_retention) = 0
BEGIN
  UPDATE stats_marks SET n = n + 1 WHERE tbl = 'jobs';
END;
`,
};
