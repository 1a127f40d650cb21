/**
 * The retry policy for jobs whose session died: requeue with exponential backoff until the
 * attempts run out, then fail.
 */
export interface RetryPolicy {
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { backoffBaseMs: 2000, backoffMaxMs: 60_000 };

/** Delay before attempt `attempt + 1`, after `attempt` attempts have been made (attempt >= 1). */
export function backoffMs(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
}

/**
 * Said of a requeue whose attempt never started an agent (placed on a host that died, say): the
 * attempt is given back, so crashes of hosts cannot use up a job's attempts (issue 14, item 7).
 */
export const ATTEMPT_NOT_COUNTED = '; no agent had started, so the attempt does not count';

/**
 * Said of a requeue whose agent did not fail: its own runner stopped it to shut down gracefully
 * (SIGTERM, SIGINT; the operator stopped the host). The attempt is given back, the job goes back
 * at once. A runner that dies (SIGKILL, a crash) cannot say so, and its rescue counts as before.
 */
export const ATTEMPT_GIVEN_BACK = '; the agent did not fail, so the attempt does not count';
