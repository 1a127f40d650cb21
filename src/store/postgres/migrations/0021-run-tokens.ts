/**
 * An agent token bound to its run, as in the SQLite migration of the same number: the job attempt
 * (job id and its epoch) and the claim epoch it was minted for; `verify` opens it only while all
 * three are still live. No foreign key to jobs: a pruned job leaves the token dead.
 */
export default {
  version: 21,
  name: 'run-tokens',
  sql: `
ALTER TABLE tokens ADD COLUMN job_id bigint;
ALTER TABLE tokens ADD COLUMN job_epoch bigint;
ALTER TABLE tokens ADD COLUMN claim_epoch bigint;
ALTER TABLE tokens ADD CONSTRAINT tokens_run_binding
  CHECK ((job_id IS NULL) = (claim_epoch IS NULL) AND (job_id IS NULL) = (job_epoch IS NULL));
`,
};
