/**
 * Deletion marks (docs/decisions/0040), as PostgreSQL's 0037: stats() keeps running counts of
 * jobs and claims per store, exact only while no row it counted is deleted. Nothing on the hot
 * paths deletes either; job retention does, in passes of its own. Each deleted row bumps its
 * table's mark here (SQLite's triggers run per row), and a store whose cache was built under
 * another mark counts again from the first row.
 */
export default {
  version: 37,
  name: 'row-deletions',
  sql: `
CREATE TABLE row_deletions (
  tbl TEXT PRIMARY KEY CHECK (tbl IN ('jobs', 'claims')),
  n INTEGER NOT NULL DEFAULT 0
);
INSERT INTO row_deletions (tbl) VALUES ('jobs'), ('claims');
CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs
BEGIN
  UPDATE row_deletions SET n = n + 1 WHERE tbl = 'jobs';
END;
CREATE TRIGGER claims_deleted AFTER DELETE ON claims
BEGIN
  UPDATE row_deletions SET n = n + 1 WHERE tbl = 'claims';
END;
`,
};
