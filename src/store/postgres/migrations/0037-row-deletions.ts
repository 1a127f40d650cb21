/**
 * Deletion marks (docs/decisions/0040): stats() keeps running counts of jobs and claims per
 * store, exact only while no row it counted is deleted. Nothing on the hot paths deletes either;
 * job retention does, in passes of its own. Each statement that deletes from one of them bumps
 * its table's mark here, and a store whose cache was built under another mark counts again from
 * the first row.
 */
export default {
  version: 37,
  name: 'row-deletions',
  sql: `
CREATE TABLE row_deletions (
  tbl text PRIMARY KEY CHECK (tbl IN ('jobs', 'claims')),
  n bigint NOT NULL DEFAULT 0
);
INSERT INTO row_deletions (tbl) VALUES ('jobs'), ('claims');
CREATE FUNCTION row_deletions_bump() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE row_deletions SET n = n + 1 WHERE tbl = TG_TABLE_NAME;
  RETURN NULL;
END;
$fn$;
CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION row_deletions_bump();
CREATE TRIGGER claims_deleted AFTER DELETE ON claims FOR EACH STATEMENT EXECUTE FUNCTION row_deletions_bump();
`,
};
