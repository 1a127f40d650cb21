/**
 * An agent token bound to its run (issue 17; decision 0012, amended): the job attempt (job id and
 * its epoch) and the claim epoch it was minted for. `verify` opens such a token only while that
 * job is still claimed or running at that epoch, that claim is unreleased and its session is live
 * within its TTL, so a run whose runner died stops opening the API without anyone revoking it.
 * No foreign key to jobs: a pruned job leaves the token dead, not the prune refused.
 */
export default {
  version: 21,
  name: 'run-tokens',
  sql: `
ALTER TABLE tokens ADD COLUMN job_id INTEGER;
ALTER TABLE tokens ADD COLUMN job_epoch INTEGER;
ALTER TABLE tokens ADD COLUMN claim_epoch INTEGER
  CHECK ((job_id IS NULL) = (claim_epoch IS NULL) AND (job_id IS NULL) = (job_epoch IS NULL));
`,
};
