/**
 * The dispatcher's view of its hosts in time linear in the fleet (issue 22): hosts.list() joins
 * every host to its active jobs (`jobs.host = hosts.name`).
 * - jobs.host sorts by code point (COLLATE "C"), as hosts.name and SQLite's BINARY do: with
 *   the two join columns in different collations no index on jobs.host could serve the join.
 *   The type stays text, so the table is not rewritten; its indexes on host are rebuilt.
 * - jobs_active_by_host: the active jobs of one host, under the same predicate as the load's
 *   join. jobs_active (session_id, host) stays for the lookups by session; it cannot serve a
 *   lookup by host alone, so each host read every active job of the fleet (1,000 hosts × 8
 *   active jobs: 9.7 s per hosts.list, 16 ms with this index).
 */
export default {
  version: 9,
  name: 'host-load-index',
  sql: `
ALTER TABLE jobs ALTER COLUMN host TYPE text COLLATE "C";
CREATE INDEX jobs_active_by_host ON jobs (host) WHERE status IN ('claimed', 'running');
`,
};
