/**
 * The dispatcher's view of its hosts in time linear in the fleet (issue 22), as PostgreSQL's
 * 0009 (version 9 on both engines; SQLite has no 8): jobs_active_by_host, the active jobs of one
 * host under the same predicate as HOST_SELECT's subqueries. jobs_active (session_id, host)
 * stays for the lookups by session; it cannot serve a lookup by host alone, so each host read
 * every active job of the fleet.
 */
export default {
  version: 9,
  name: 'host-load-index',
  sql: `
CREATE INDEX jobs_active_by_host ON jobs (host) WHERE status IN ('claimed', 'running');
`,
};
