/**
 * The schema's version as both engines read it: the newest migration such that every listed one up
 * to it is recorded in `schema_migrations`, not the newest recorded. Migrations are written in
 * parallel and merged, so a database may have been migrated by a build that listed a later number
 * before an earlier one (0040 before 0038 once, decision 0043): its newest row says 40 while 38
 * and 39 never ran. Read this way it reads 37, so it is "older than this baton" and the runners
 * apply what it misses (each skips the versions it already has). A version newer than every listed
 * one still reads as itself, so a newer database is still refused.
 */

/** The statement (both dialects) answering `v` for the migrations `listed`. */
export function versionSql(listed: readonly number[]): string {
  const rows = listed.map((version) => `(${version})`).join(', ');
  return `WITH listed(v) AS (VALUES ${rows}), done(v) AS (SELECT version FROM schema_migrations)
SELECT CASE WHEN (SELECT max(v) FROM done) > (SELECT max(v) FROM listed) THEN (SELECT max(v) FROM done)
  ELSE coalesce((SELECT max(l.v) FROM listed l WHERE l.v < coalesce(
    (SELECT min(m.v) FROM listed m WHERE m.v NOT IN (SELECT v FROM done)), (SELECT max(v) FROM listed) + 1)), 0)
  END AS v`;
}

/** The recorded versions, as a set the runners skip. */
export const RECORDED_SQL = 'SELECT version FROM schema_migrations';
