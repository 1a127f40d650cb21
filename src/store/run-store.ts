/**
 * The beginning of a run in storage terms (daemon/run-start.ts): the job's start, the agent's
 * session and the task's claim for that session, in one transaction and one commit (issue 22,
 * item 3: each commit was a wait between a placement and the agent's spawn). Each write keeps the
 * guard and the ledger row it has alone: the start is guarded by (session, epoch) as `jobs.start`,
 * the claim is judged as `claims.acquire` for the session just made (a grant refused for a reason
 * to explain is judged again by `claims.acquire` itself, after the start and the session commit).
 */
import type { ClaimResult } from '../core/claim.js';
import type { Job, JobTransitionResult } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { JobGuardParams, SessionStartParams } from './store.js';

export interface RunBeginParams {
  /** The job's start, guarded as `jobs.start`. */
  readonly job: JobGuardParams;
  /** The agent's session, made only when the start is granted. */
  readonly session: SessionStartParams;
  /** The task the claim is asked on, for the new session. */
  readonly key: string;
}

export type RunBeginResult =
  /** The start was refused (the job moved on): nothing was written. */
  | { readonly ok: false; readonly start: Extract<JobTransitionResult, { ok: false }> }
  /**
   * Started, with the session made; `claim` is what `claims.acquire` answers for that session,
   * or the error it throws (a TaskStateError when the task left `open`, NotFoundError for an
   * unknown task): the start and the session stand either way, for the caller to end.
   */
  | {
      readonly ok: true;
      readonly job: Job;
      readonly session: Session;
      readonly claim: ClaimResult | Error;
    };

export interface RunStore {
  readonly runs: {
    /**
     * Starts the job, makes the agent's session and asks the task's claim for it, in one commit
     * when the claim is granted. A failure of the start or the session throws and writes nothing.
     */
    begin(params: RunBeginParams): Promise<RunBeginResult>;
  };
}
