/**
 * The rare finished states (docs/decisions/0041-reads-at-a-million-jobs.md): `queue list --status
 * oom_killed` walked the finished jobs back to the first. A partial index of the ids of the jobs
 * that ended oom_killed or escalated answers it newest first; a job that ends done, failed or
 * cancelled (almost all of them) writes no entry in it.
 */
export default {
  version: 39,
  name: 'rare-finishes',
  sql: `
CREATE INDEX jobs_rare_finishes ON jobs (id) WHERE status IN ('oom_killed', 'escalated');
`,
};
