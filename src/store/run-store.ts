/**
 * The beginning of a run in storage terms (daemon/run-start.ts): the job's start, the agent's
 * session and the task's claim for that session, in one transaction and one commit (issue 22,
 * item 3: each commit was a wait between a placement and the agent's spawn). Each write keeps the
 * guard and the ledger row it has alone: the start is guarded by (session, epoch) as `jobs.start`,
 * the claim is judged as `claims.acquire` for the session just made (a grant refused for a reason
 * to explain is judged again by `claims.acquire` itself, after the start and the session commit).
 * The agent's API token, asked for, is minted in that same commit once the claim is granted: the
 * run waits for one commit between its placement and its agent's spawn, not two.
 */
import type { ClaimResult } from '../core/claim.js';
import type { Job, JobTransitionResult } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { TermRef } from './dispatch-store.js';
import type { JobGuardParams, SessionStartParams } from './store.js';
import type { TokenCreated } from './token-store.js';

export interface RunBeginParams {
  /** The job's start, guarded as `jobs.start`. */
  readonly job: JobGuardParams;
  /** The agent's session, made only when the start is granted. */
  readonly session: SessionStartParams;
  /** The task the claim is asked on, for the new session. */
  readonly key: string;
  /**
   * Asked for: an `agent` token named `name`, bound to the new session and to this run (the job
   * attempt and the granted claim's epoch, token-store.ts TokenRun), without expiry, with its
   * `token:created` ledger row after `claim:granted`; made only when this call grants the claim.
   */
  readonly token?: { readonly name: string } | undefined;
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
      /**
       * The token asked for, with its secret (shown once), when the claim was granted in the
       * begin's own commit; null when not asked or the claim was not granted there (refused,
       * failed, or granted afterwards by claims.acquire, taking over an expired holder): the
       * caller makes it with tokens.create then.
       */
      readonly token: TokenCreated | null;
    };

/** A placement and the run's beginning in one commit: the job `id`, queued, placed on `host`. */
export interface RunPlaceBeginParams extends Omit<RunBeginParams, 'job'> {
  readonly term: TermRef;
  readonly id: number;
  /** The job's epoch as read: placed only at it, so the run's guard (this epoch + 1) is known first. */
  readonly epoch: number;
  readonly host: string;
  /**
   * The caller's own runner session: placed only while `host` is served by it. A runner whose
   * host another session serves now (taken over while this process was paused) places nothing:
   * the job would run under a session that is not this runner's.
   */
  readonly runner: number;
}

export type RunPlaceBeginResult =
  /** Not placed (fenced, gated, not queued, due or at `epoch`, the host not served): nothing written. */
  | { readonly placed: false }
  /** Placed and started, as `begin` answers a granted start. */
  | (Extract<RunBeginResult, { ok: true }> & { readonly placed: true });

export interface RunStore {
  readonly runs: {
    /**
     * Starts the job, makes the agent's session and asks the task's claim for it, in one commit
     * when the claim is granted. A failure of the start or the session throws and writes nothing.
     */
    begin(params: RunBeginParams): Promise<RunBeginResult>;
    /**
     * Places a queued job without a workspace on `host` under the dispatcher's `term`, for that
     * host's runner session, as dispatch.place does, and begins its run as `begin` would (started
     * at once: `job:placed` then `job:started`), in one commit. The placing process must be that
     * host's runner. Not placed: nothing written; the caller places it the usual way to learn why.
     */
    placeAndBegin(params: RunPlaceBeginParams): Promise<RunPlaceBeginResult>;
  };
}
