/**
 * Run tokens by their job, live tokens by age (docs/decisions/0039-job-retention.md, "Run tokens by job"): every run
 * of `baton up` with an API mints one, so `tokens` grows as `jobs` does. A retention batch asks,
 * per candidate job, whether a live run token names it, and deletes the spent tokens of the jobs
 * it removes: both by job id, through `tokens_by_job`, not a read of every token ever minted
 * (tokens of no run have no entry). `baton token list` shows the unrevoked ones (less the expired)
 * through `tokens_live`: a run's token is revoked when its run ends, so it leaves that index.
 */
export default {
  version: 41,
  name: 'tokens-by-job',
  sql: `
CREATE INDEX tokens_by_job ON tokens (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX tokens_live ON tokens (created_at, id) WHERE revoked_at IS NULL;
`,
};
