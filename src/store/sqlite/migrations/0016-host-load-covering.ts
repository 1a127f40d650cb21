/**
 * hosts.list() without reading the jobs table (issue 22; docs/decisions/0016): jobs_active_by_host
 * carries every column HOST_SELECT's three subqueries read (status, ram_mb, started_at beside the
 * host), so each host's load is read from the partial index alone. Before, each of a host's active
 * jobs was also read from the table, a random page of a table that holds the whole finished
 * history: at 1,000 hosts × 8 active jobs, 24,000 row reads per hosts.list. SQLite only: on
 * PostgreSQL an index-only scan needs all-visible pages, which the active jobs' pages seldom are.
 */
export default {
  version: 16,
  name: 'host-load-covering',
  sql: `
DROP INDEX jobs_active_by_host;
CREATE INDEX jobs_active_by_host ON jobs (host, status, ram_mb, started_at)
  WHERE status IN ('claimed', 'running');
`,
};
