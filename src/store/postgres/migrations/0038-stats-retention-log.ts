/**
 * stats() after job retention and in a new process (docs/decisions/0040). Each retention batch that removes jobs logs
 * them in `stats_pruned` (one row per status: how many, the lowest and the highest id) and numbers
 * the batch in `stats_retention.seq`; a store subtracts a batch it has not seen from its kept
 * counts instead of counting the jobs again. A batch locks the `stats_retention` row first (so
 * batches commit in the order of their numbers, and a snapshot sees a prefix of them) and sets
 * `quiet` in it, which the jobs' delete trigger reads: uncommitted, and cleared before commit, so
 * no other transaction sees it set. Every other delete of jobs still moves the mark. `dropped` is
 * the newest batch pruned out of the log: a store that saw less counts again from the first row.
 * `stats_kept` persists a store's running counts of each table (stats-kept.ts) for stores that
 * have none yet, which start from them and read only past them.
 */
export default {
  version: 38,
  name: 'stats-retention-log',
  sql: `
CREATE TABLE stats_retention (
  id int PRIMARY KEY CHECK (id = 1),
  quiet boolean NOT NULL DEFAULT false,
  seq bigint NOT NULL DEFAULT 0,
  dropped bigint NOT NULL DEFAULT 0
);
INSERT INTO stats_retention (id) VALUES (1);
CREATE TABLE stats_pruned (
  seq bigint NOT NULL,
  status text NOT NULL,
  removed bigint NOT NULL,
  first_id bigint NOT NULL,
  last_id bigint NOT NULL,
  PRIMARY KEY (seq, status)
);
CREATE TABLE stats_kept (
  tbl text PRIMARY KEY CHECK (tbl IN ('jobs', 'claims', 'audit_events', 'tasks')),
  through bigint NOT NULL,
  mark bigint NOT NULL,
  seen bigint NOT NULL,
  counts text NOT NULL,
  mins text NOT NULL,
  pending text NOT NULL
);
CREATE OR REPLACE FUNCTION stats_marks_bump_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF EXISTS (SELECT 1 FROM gone)
     AND NOT (TG_TABLE_NAME = 'jobs' AND coalesce((SELECT quiet FROM stats_retention WHERE id = 1), false)) THEN
    UPDATE stats_marks SET n = n + 1 WHERE tbl = TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END;
$fn$;
`,
};
