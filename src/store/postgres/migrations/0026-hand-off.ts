/**
 * Hand-off at enqueue (docs/decisions/0024): a session whose claimNext found nothing may say it
 * waits (`wait_until`, with the host and start flag its claim would have used), and an enqueue
 * in that time claims its new job for the waiting session whose wait ends first, in the
 * enqueue's own statement, and names the job in `handed_job` until the session has taken it.
 * `sessions_waiting` keeps the enqueue's search for a waiter to the sessions that wait.
 */
export default {
  version: 26,
  name: 'hand-off',
  sql: `
ALTER TABLE sessions
  ADD COLUMN wait_until timestamptz,
  ADD COLUMN wait_host text CHECK (wait_host IS NULL OR length(wait_host) BETWEEN 1 AND 100),
  ADD COLUMN wait_start boolean NOT NULL DEFAULT false,
  ADD COLUMN handed_job bigint;
CREATE INDEX sessions_waiting ON sessions (wait_until) WHERE wait_until IS NOT NULL;
`,
};
