/**
 * The storage port. Every method is one atomic step judged on the database's clock: on
 * PostgreSQL usually one statement (a data-modifying CTE that also writes the audit row), on
 * SQLite one BEGIN IMMEDIATE transaction. The engines differ in SQL text, never in behaviour;
 * `src/store/conformance/` is the proof, and every change here comes with a change there.
 *
 * Expected outcomes (held, lost, fenced) are returned values. Refusals (unknown task, ended
 * session, bad input the domain could not catch) throw BatonError subclasses.
 */
import type { AuditEntry, AuditType } from '../core/audit-event.js';
import type { Claim, ClaimResult, FencedResult, Holder, ReleaseOutcome } from '../core/claim.js';
import type { Job, JobId, JobState, JobTransitionResult } from '../core/job.js';
import type { Wakeups } from './wakeups.js';
import type { Lease, LeaseResult } from '../core/lease.js';
import type { ListedSession, Session, SessionEndReason, SessionId, SessionQuery } from '../core/session.js';
import type { Actor, Task } from '../core/task.js';
import type { ListedTask, TaskListParams } from './task-list.js';
import type { JobListParams } from './job-list.js';
export type { ListedTask, TaskListParams } from './task-list.js';
import type { Instant } from '../core/time.js';
import type { DispatchStore } from './dispatch-store.js';
import type { SessionEndReport } from './rescue.js';
import type { EffectsStore } from './effects-store.js';
import type { GithubStore } from './github-store.js';
import type { LifecycleStore } from './lifecycle-store.js';
import type { ProgressStore } from './progress-store.js';
import type { LedgerStore } from './ledger-store.js';
import type { ObserveStore } from './observe-store.js';
import type { RunStore } from './run-store.js';
import type { OutputStore } from './output-store.js';
import type { RetentionStore } from './retention-store.js';
import type { TokenStore } from './token-store.js';
import type { WorkspaceStore } from './workspace-store.js';
import type { JobBatchParams, JobBatchResult } from './job-batch.js';
import type { Engine, StoreCapabilities } from './capabilities.js';

export interface TaskAddParams {
  readonly key: string;
  readonly title?: string | undefined;
  readonly priority?: number | undefined;
  readonly project?: string | null | undefined;
  readonly assignee?: string | null | undefined;
  readonly labels?: readonly string[] | undefined;
  readonly body?: string | undefined;
  readonly url?: string | null | undefined;
  /** A successful run leaves the task in review instead of done. */
  readonly reviewRequired?: boolean | undefined;
  /** Session recorded in the audit row, if any. */
  readonly by?: SessionId | undefined;
  /** Who added it, in words (the task's first state_by). */
  readonly byName?: string | undefined;
  /** Who asked, in words (`alice@box`, `token t1`): `by` in the `task:added` row (issue 14, item 11). */
  readonly actor?: string | undefined;
  /** Adds the task `escalated` with this reason (the vague-issue rule), audited as such. */
  readonly escalation?: string | undefined;
  /** Tasks it waits for (decision 0035): edges added in the add's transaction; a refused one adds nothing. */
  readonly after?: readonly string[] | undefined;
}

/** Fields of a task an importer or a person may change; left out, a field stays as it is. */
export interface TaskUpdateParams {
  readonly key: string;
  readonly title?: string | undefined;
  readonly body?: string | undefined;
  readonly url?: string | null | undefined;
  readonly labels?: readonly string[] | undefined;
  readonly reviewRequired?: boolean | undefined;
  readonly by: Actor;
}

export interface SessionStartParams {
  readonly kind: Session['kind'];
  readonly host: string;
  readonly pid: number;
  readonly name?: string | null | undefined;
  /** How long the session may stay silent and still be live; left out, it declares none. */
  readonly ttlMs?: number | undefined;
}

export interface HeartbeatParams {
  readonly session: SessionId;
  /** Named, the heartbeat also proves the claim still current; left out, it renews all the session's claims. */
  readonly claim?: { readonly key: string; readonly epoch: number } | undefined;
}

export interface ClaimAcquireParams {
  readonly key: string;
  readonly session: SessionId;
}

export interface ClaimReleaseParams {
  readonly key: string;
  readonly session: SessionId;
  readonly epoch: number;
  readonly outcome: ReleaseOutcome;
}

export interface ClaimForceReleaseParams {
  readonly key: string;
  /** Why, kept in the ledger and in the ended job's reason. */
  readonly reason: string;
  /** Who did it (an operator), kept in the ledger. */
  readonly by: Actor;
}

export type ClaimForceReleaseResult =
  | {
      readonly ok: true;
      /** Who held the claim, at the epoch now fenced. */
      readonly holder: Holder;
      /** The run that held it (claimed or running), now cancelled, and the state it was in. */
      readonly job: { readonly id: JobId; readonly was: JobState } | null;
    }
  | { readonly ok: false; readonly reason: 'no_claim' };

export interface JobEnqueueParams {
  readonly key: string;
  readonly priority?: number | undefined;
  readonly ramMb?: number | null | undefined;
  readonly command?: string | null | undefined;
  readonly attemptMax?: number | undefined;
  /** The job's own run time limit in ms (Job.timeLimitMs); none: the runner's default, if any. */
  readonly timeLimitMs?: number | null | undefined;
  readonly by?: SessionId | undefined;
  /** Who asked, in words: `by` in the `job:enqueued` row (and `task:added`, when it adds the task). */
  readonly actor?: string | undefined;
}

export interface JobEnqueueResult {
  readonly job: Job;
  /** false when the task already had an active job, which is returned instead. */
  readonly created: boolean;
}

export interface JobClaimNextParams {
  readonly session: SessionId;
  /** Host the job will run on; defaults to the session's host. */
  readonly host?: string | undefined;
  /**
   * Start the job in the same step: queued → claimed → running in one durable commit
   * (claimed_at = started_at), with one 'job:claimed' ledger row whose detail says `started: true`
   * (no separate 'job:started' row: one transition, one row; decision 0023).
   * For a caller that runs the job at once; one commit fewer per job than claimNext + start.
   */
  readonly start?: boolean | undefined;
  /**
   * When no job is due, the session waits for one for this long (ms, database clock): an enqueue
   * meanwhile claims its job for the waiting session whose wait ends first, in its own commit (a
   * hand-off: 'job:claimed' with `handedOff: true`), and the session's next claimNext takes it
   * without a claim. Between calls a worker waits on `store.wakeups`. A hand-off never taken (or
   * whose taker died before saying so) is claimed again by the next claimNext under a new epoch;
   * left alone, it is held until its session ends or goes stale and the leader's rescue
   * (`baton up`'s sweep, rescueStale) requeues it. One process waits per session (decision 0024):
   * two waiting on one session may both run a hand-off under epoch 1 if PostgreSQL lost the
   * first's take in a crash (the take is not waited to disk).
   */
  readonly waitMs?: number | undefined;
}

export interface JobGuardParams {
  readonly id: JobId;
  readonly session: SessionId;
  readonly epoch: number;
}

export interface JobFinishParams extends JobGuardParams {
  readonly status: 'done' | 'failed' | 'oom_killed' | 'cancelled';
  readonly exitCode?: number | null | undefined;
  readonly reason?: string | null | undefined;
  /** The last lines the agent printed, kept for a failed job. */
  readonly outputTail?: string | null | undefined;
}

export interface JobFinishAndClaimNextParams extends JobFinishParams {
  /** Host the next job will run on; defaults to the session's host. */
  readonly host?: string | undefined;
  /** Start the next job in the same step, as JobClaimNextParams.start. */
  readonly start?: boolean | undefined;
}

export interface JobFinishAndClaimNextResult {
  /** What finish alone would have answered. */
  readonly finished: JobTransitionResult;
  /** What claimNext alone would have answered. */
  readonly next: Job | null;
}

export interface JobCancelParams {
  readonly id: JobId;
  readonly by?: SessionId | undefined;
  /** Who cancelled, in words (`alice@box`): the ledger row's `by`, and the job's reason. */
  readonly actor?: string | undefined;
  readonly reason?: string | undefined;
}

export type { JobListParams } from './job-list.js';

export interface LeaseAcquireParams {
  readonly name: string;
  readonly holder: string;
  readonly ttlMs: number;
}

export interface LeaseRenewParams {
  readonly name: string;
  readonly holder: string;
  readonly term: number;
  readonly ttlMs: number;
}

export interface LeaseResignParams {
  readonly name: string;
  readonly holder: string;
  readonly term: number;
}

export interface AuditListParams {
  readonly key?: string | undefined;
  readonly session?: SessionId | undefined;
  readonly jobId?: JobId | undefined;
  readonly type?: AuditType | undefined;
  /** Entries with id greater than this, oldest first. */
  readonly afterId?: number | undefined;
  /** Entries with id below this (a keyset page). */
  readonly beforeId?: number | undefined;
  /** Entries with id at most this (a follower's settled bound: `audit.settled`). */
  readonly throughId?: number | undefined;
  /** The host the row names. */
  readonly host?: string | undefined;
  /** The token the row was written with (audit_events.token_id, by audit_by_token). */
  readonly token?: string | undefined;
  /** Newest first instead of oldest first: the last `limit` entries that match. */
  readonly newestFirst?: boolean | undefined;
  readonly limit?: number | undefined;
}

export interface Store
  extends
    DispatchStore,
    WorkspaceStore,
    EffectsStore,
    LifecycleStore,
    ProgressStore,
    LedgerStore,
    ObserveStore,
    TokenStore,
    RunStore,
    OutputStore,
    RetentionStore,
    GithubStore {
  readonly engine: Engine;
  readonly capabilities: StoreCapabilities;
  now(): Promise<Instant>; // the database clock
  /**
   * The newest migration the database has and the newest this code knows: /readyz is ready when
   * they are equal (a newer process may have migrated past this one).
   */
  schema(): Promise<{ readonly applied: number; readonly known: number }>;
  close(): Promise<void>;
  /** Hints that work may have appeared or capacity freed, for idle loops (wakeups.ts). */
  readonly wakeups: Wakeups;

  readonly tasks: {
    /** Inserts a task; a ConflictError when the key exists. */
    add(params: TaskAddParams): Promise<Task>;
    /** The task with this key, or null. */
    get(key: string): Promise<Task | null>;
    /** Tasks by priority, then key; with a label, those that have it among theirs (any state). */
    list(params?: TaskListParams): Promise<readonly ListedTask[]>;
    /** Changes the fields given, audited `task:updated`; NotFoundError for an unknown task. */
    update(params: TaskUpdateParams): Promise<Task>;
    keysBeyondAscii(limit: number): Promise<readonly string[]>; // more bytes than chars, oldest first (0054)
  };

  readonly sessions: {
    /** Registers a live session; its first heartbeat is its start. */
    start(params: SessionStartParams): Promise<Session>;
    /**
     * Ends a live session and releases its claims and workspace locks (outcome `abandoned`) in
     * the same step, and gives back the jobs it took in pull mode (claimNext, jobs.batch): each
     * queued again at once, its attempt not counted, audited `job:requeued`, and named in the
     * answer. A runner's placed jobs are left to its own requeue or the sweep. `ended` false (and
     * no jobs) if already ended. Records `how` (end_reason, `session:ended` row): `stopped` (default),
     * `died` (a restarted `baton up` ends its dead predecessor's), `operator` (by someone else: `by`).
     */
    end(session: SessionId, how?: SessionEndReason, by?: string): Promise<SessionEndReport>;
    /**
     * Records a heartbeat. NotFoundError for an unknown session; `fenced` when the session has
     * ended (`sessionEnded`, naming who holds the named task now) or the claim is not its own.
     */
    heartbeat(params: HeartbeatParams): Promise<FencedResult>;
    get(session: SessionId): Promise<Session | null>;
    list(params?: SessionQuery): Promise<readonly ListedSession[]>;
  };

  readonly claims: {
    /**
     * Grants the task to the session if no live claim exists, bumping the task's epoch; returns
     * the existing claim (granted: false) when this session already holds it; `held` with the
     * holder otherwise. A live claim whose session has passed its TTL (database clock) is taken
     * over in the same step: released `expired`, the epoch bumped, the old holder fenced.
     * NotFoundError for an unknown task or session; FencedError for an ended one; TaskStateError
     * unless the task is open.
     */
    acquire(params: ClaimAcquireParams): Promise<ClaimResult>;
    /**
     * Releases the claim only if (session, epoch) is the live claim; `fenced` otherwise, naming
     * who holds the task now, with `sessionEnded` when the session has ended (or was rescued).
     * Outcome `done` finishes an open task in the same step (to done, or in review when it requires it).
     */
    release(params: ClaimReleaseParams): Promise<FencedResult>;
    /**
     * An operator ends the task's live claim, whoever holds it: the claim ends `released`, the
     * task's claimed or running job ends `cancelled` with the reason (its workspace lock goes
     * with it, unless it was running: its runner releases that once the agent's tree is dead),
     * and `claim:force_released` names who, why and the fenced epoch; one step. Every later
     * write of the old holder under that epoch is fenced. `no_claim` when none is live;
     * NotFoundError for an unknown task.
     */
    forceRelease(params: ClaimForceReleaseParams): Promise<ClaimForceReleaseResult>;
    /** The live claim on the task, or null. */
    current(key: string): Promise<Claim | null>;
    /** Every claim ever granted on the task, oldest first. */
    history(key: string): Promise<readonly Claim[]>;
  };

  readonly jobs: {
    /**
     * Queues a job for the task (creating the task if needed); at most one active job per task.
     * TaskStateError unless the task is open.
     */
    enqueue(params: JobEnqueueParams): Promise<JobEnqueueResult>;
    /**
     * Claims the best queued job (priority, queued_at, id) for the session, passing over jobs whose
     * task is not open or waits behind a gate; null when none.
     */
    claimNext(params: JobClaimNextParams): Promise<Job | null>;
    /** claimed → running, guarded by (session, epoch). */
    start(params: JobGuardParams): Promise<JobTransitionResult>;
    /**
     * claimed or running → done | failed | oom_killed | cancelled, guarded by (session, epoch);
     * done and oom_killed only from running. Releases the job's workspace lock in the same step;
     * a job that ends done finishes its open task in the same step (to done, or in review).
     */
    finish(params: JobFinishParams): Promise<JobTransitionResult>;
    /**
     * finish, then claimNext for the same session, in one durable commit: a worker that loops
     * pays one commit per job instead of two. The finish keeps its guards and answers as finish
     * does; a `lost` finish still claims the next job (the worker moves on). Audit rows in order:
     * the finish's (and its lock releases), then the claim's. Throws FencedError (NotFoundError
     * for an unknown session) and changes nothing unless the session is live.
     */
    finishAndClaimNext(params: JobFinishAndClaimNextParams): Promise<JobFinishAndClaimNextResult>;
    /**
     * Batch completion and fetch in one durable commit: finishes each member of `finish` as
     * finish would (a fenced member answers `lost` alone, the others commit), gives back to the
     * queue jobs whose lease has passed (audited `job:requeued`, or failed once their attempts are
     * spent), then takes up to `take` due jobs in queue order, each claimed and started under its
     * own epoch and lease. Ledger rows in order: the finishes (member by member), the claims (one
     * `job:claimed` row each, `started: true`), then the give-backs. With `take`, throws FencedError
     * (NotFoundError for an unknown session) and changes nothing unless the session is live.
     */
    batch(params: JobBatchParams): Promise<JobBatchResult>;
    /** Queues a new job for the ended job's task, same command and budget; `actor`: the ledger row's `by`. */
    retry(params: {
      readonly id: JobId;
      /** The new job's RAM budget in MB (null: none); left out, the ended job's. */
      readonly ramMb?: number | null | undefined;
      readonly by?: SessionId | undefined;
      readonly actor?: string | undefined;
    }): Promise<JobEnqueueResult>;
    /**
     * Any active state → cancelled; `lost` when the job is already terminal. Releases the job's
     * workspace lock in the same step, unless the job was running: its agent may still be at
     * work, so the runner releases it once the tree is dead (workspaceLocks.releaseJob), or it
     * goes with the runner's session.
     */
    cancel(params: JobCancelParams): Promise<JobTransitionResult>;
    get(id: JobId): Promise<Job | null>;
    list(params?: JobListParams): Promise<readonly Job[]>;
  };

  readonly leases: {
    /** Takes the lease when free or expired (a new term), or returns `held`. */
    acquire(params: LeaseAcquireParams): Promise<LeaseResult>;
    /** Extends exactly (holder, term) if it has not expired; `lost` otherwise. */
    renew(params: LeaseRenewParams): Promise<LeaseResult>;
    /** Gives up exactly (holder, term); false if that term is gone. */
    resign(params: LeaseResignParams): Promise<boolean>;
    get(name: string): Promise<Lease | null>;
  };

  readonly audit: {
    /** Ledger entries, oldest first. */
    list(params?: AuditListParams): Promise<readonly AuditEntry[]>;
    /** The highest id no transaction in flight can still commit a row at or below; never waits (0027). */
    settled(): Promise<number>;
  };
}
