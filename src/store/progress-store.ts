/**
 * Progress marks and stalls (core/progress.ts). A mark adds to its session's counters and moves
 * the session's last progress to the database clock; a stall is judged on the same clock, in
 * one guarded step with its ledger row (`job:stalled`), and the next mark clears it in one step
 * with its own (`job:unstalled`). A run past its time limit is judged on the same clock, audited
 * `job:timed_out`. Marks themselves are not in the ledger: they are frequent and
 * change no ownership.
 */
import type { Job, JobId, JobTransitionResult } from '../core/job.js';
import type { Progress, ProgressMark } from '../core/progress.js';
import type { SessionId } from '../core/session.js';
import type { Instant } from '../core/time.js';
import type { JobFinishParams } from './store.js';

export interface ProgressMarkParams extends ProgressMark {
  readonly session: SessionId;
}

export type ProgressMarkResult =
  | {
      readonly ok: true;
      readonly progress: Progress;
      /** The running job whose stall this mark cleared, if any. */
      readonly unstalled: JobId | null;
    }
  /** The session has ended or was declared stale: nothing was recorded. */
  | { readonly ok: false; readonly reason: 'fenced' };

export interface StallParams {
  readonly id: JobId;
  /** The job's session and epoch: the runner that supervises it. */
  readonly session: SessionId;
  readonly epoch: number;
  readonly stallAfterMs: number;
}

export type StallResult =
  | { readonly stalled: true; readonly lastProgressAt: Instant }
  /**
   * `progressing`: a mark (or the start) is within the threshold; `already`: the run is marked
   * stalled and has made no mark since; `lost`: the job is not running under this (session, epoch)
   * or its agent is not attached yet.
   */
  | { readonly stalled: false; readonly reason: 'progressing' | 'already' | 'lost' };

export interface TimeLimitParams {
  readonly id: JobId;
  /** The job's session and epoch: the runner that supervises it. */
  readonly session: SessionId;
  readonly epoch: number;
  /** The runner's limit (`baton up --time-limit`) for a job without one of its own; null: none. */
  readonly defaultLimitMs: number | null;
}

export type TimeLimitResult =
  /**
   * The run has passed its limit. `first`: this verdict wrote the `job:timed_out` row (once per
   * job and epoch); a later one says so again and writes nothing, so a runner that lost the first
   * answer still kills the run.
   */
  | {
      readonly timedOut: true;
      readonly startedAt: Instant;
      readonly limitMs: number;
      readonly first: boolean;
    }
  /**
   * `within`: the limit is not reached; `none`: neither the job nor the runner sets one; `lost`:
   * the job is not running under this (session, epoch).
   */
  | { readonly timedOut: false; readonly reason: 'within' | 'none' | 'lost' };

/**
 * A pull finish held to the job's own time limit (failTimedOut). Past it: the verdict as
 * markTimedOut's, and the failing finish made in the same transaction (`finished`: the job as it
 * ended). Otherwise nothing was written: `within` or `none` (the caller finishes as asked), `lost`
 * (the run is not this session's and epoch's, or its finish would not match: nothing timed out).
 */
export type TimedOutFinishResult =
  | {
      readonly timedOut: true;
      readonly startedAt: Instant;
      readonly limitMs: number;
      readonly first: boolean;
      readonly finished: JobTransitionResult;
    }
  | { readonly timedOut: false; readonly reason: 'within' | 'none' | 'lost' };

/**
 * Who judged a run past its time limit, as its `job:timed_out` row says (`by`): the runner of a
 * `baton up` (markTimedOut, which then kills the run), a pull worker's finish or batch
 * (failTimedOut, jobs.batch), or the leader's sweep (sweepTimedOut), which also names the leader's
 * session (`bySession`) there and in the `job:finished` row it writes. `/metrics` counts the rows
 * by it (`baton_jobs_timed_out_total`).
 */
export type TimedOutBy =
  { readonly by: 'runner' | 'finish' } | { readonly by: 'leader'; readonly bySession: SessionId };

/** The leader's sweep: at most `max` jobs, audited as failed by the leader's session `leaderSession`. */
export interface TimeLimitSweepParams {
  readonly max: number;
  readonly leaderSession: SessionId;
}

/** What one leader's sweep (sweepTimedOut) failed: the pull-held jobs past their own limit. */
export interface TimeLimitSweepResult {
  /** The jobs failed `timed out`, as they ended, oldest start first. */
  readonly failed: readonly Job[];
}

export interface ProgressStore {
  readonly progress: {
    /**
     * Adds the mark to the session's record (creating it) and clears a stall: in the same step,
     * when the session's record was stalled, the running job of that agent session gets a
     * `job:unstalled` ledger row. NotFoundError for an unknown session; InvalidInputError for a
     * mark that counts nothing; `fenced` when the session is not live.
     */
    mark(params: ProgressMarkParams): Promise<ProgressMarkResult>;
    /** The session's record, or null when it made no mark and was never stalled. */
    get(session: SessionId): Promise<Progress | null>;
    /** The records of these sessions (those that have one), for lists of jobs. */
    list(sessions: readonly SessionId[]): Promise<readonly Progress[]>;
    /**
     * Marks a running job stalled when its agent session's last mark (or, with none, the job's
     * start) is at least stallAfterMs old on the database clock. Guarded by (id, session,
     * epoch, running, agent attached) and by the record not being stalled already; audited
     * `job:stalled` with the last progress time, in the same step.
     */
    markStalled(params: StallParams): Promise<StallResult>;
    /**
     * Judges a running job's time limit (its own, else defaultLimitMs) against its start
     * (`started_at`), both on the database clock. Guarded by (id, session, epoch, running); the
     * first verdict past the limit writes the `job:timed_out` ledger row (start, limit) in the
     * same step; the runner then kills the run and fails its job.
     */
    markTimedOut(params: TimeLimitParams): Promise<TimeLimitResult>;
    /**
     * A pull-mode finish's time limit (decision 0037): when the running job is past its own limit
     * on the database clock, writes its `job:timed_out` row (once per epoch) and fails it, the
     * worker's status and reason kept in its reason after `timed out: …`, in one transaction, so
     * a crash leaves both or neither. Guarded as finish is (session, epoch, lease); a finish that
     * would not match writes nothing and answers `lost`. Within the limit, or with none, nothing
     * is written and the caller finishes the job as asked.
     */
    failTimedOut(params: JobFinishParams): Promise<TimedOutFinishResult>;
    /**
     * The leader's sweep (decision 0037, "The leader's sweep"): up to `max` running jobs past their
     * own time limit on the database clock that no runner runs (no dispatcher term: taken in pull
     * mode, whatever its session's kind; a placed job's runner judges it and kills its tree),
     * oldest start first, read through the partial index of running jobs with a limit (migration
     * 0043), each failed `timed out` as a pull finish past its limit is (its `job:timed_out` row
     * once per epoch, then its failing finish: claim, lock and task as a failed finish leaves
     * them; both rows say `by: 'leader'` and the leader's session), all in one transaction. The
     * holder's late finish under the same epoch then answers lost.
     */
    sweepTimedOut(params: TimeLimitSweepParams): Promise<TimeLimitSweepResult>;
  };
}
