/**
 * The part of the port the dispatcher, the runners and recovery use: hosts with live capacity,
 * term-fenced placement of jobs, the runner's view of its assignments, and rescue of work whose
 * session stopped heartbeating. Every change is one guarded step, audited with it.
 */
import type { ContainmentKind } from '../core/containment.js';
import type { DispatchCandidate } from '../core/dispatch-plan.js';
import type { Job, JobId, JobTransitionResult } from '../core/job.js';
import type { Fleet, HostCapacity } from '../core/capacity.js';
import type { RetryPolicy } from '../core/retry.js';
import type { SessionId } from '../core/session.js';
import type { Instant } from '../core/time.js';
import type { LockHolder } from '../core/workspace-lock.js';
import type { TaskGate } from '../core/task.js';

/** A queued job as the dispatcher sees it: with the gate its task waits behind, if any. */
export interface QueuedJob extends Job {
  readonly gate: TaskGate | null;
}

export interface Host extends HostCapacity {
  /** The runner session serving the host, if any. */
  readonly session: SessionId | null;
  readonly registeredAt: Instant;
  /** How the host's runner keeps each job's processes together; null until a runner said. */
  readonly containment: ContainmentKind | null;
  /** The runner's own reference to what it made (cgroups, marker), for its successor; opaque here. */
  readonly containmentRef: string | null;
  /** Free and total space where its runner keeps state and job logs (MB); null until it said. */
  readonly diskFreeMb: number | null;
  readonly diskTotalMb: number | null;
  /**
   * Disabled by its own `baton up` draining (SIGTERM), not by an operator: `enabled` is false,
   * and the next `baton up` on the host enables it again (an operator's enable or disable clears it).
   */
  readonly draining: boolean;
  /** Its runner's default run time limit (`baton up --time-limit`), as its last register said; null: none. */
  readonly timeLimitMs: number | null;
  /** Whether its runner runs jobs without a command of their own, as its last register said; null: not said. */
  readonly agentCommand: boolean | null;
}

/**
 * An operator's retire (`baton host retire`): `retired` once its row is gone; `serving` while a
 * live runner session serves it, `busy` while jobs there are claimed or running (`jobs` of them).
 */
export type HostRetire =
  | { readonly outcome: 'retired' }
  | { readonly outcome: 'serving' }
  | { readonly outcome: 'busy'; readonly jobs: number };

/** An operator's enable or disable: the host after it, and whether it changed anything. */
export interface HostToggle {
  readonly host: Host;
  /** False when the host had that flag already (no drain behind it): nothing written, no ledger row. */
  readonly changed: boolean;
}

export interface HostContainmentParams {
  readonly name: string;
  /** The runner session serving the host; nothing is written for any other. */
  readonly session: SessionId;
  readonly containment: ContainmentKind;
  readonly containmentRef: string;
}

export interface HostRegisterParams {
  readonly name: string;
  readonly session: SessionId;
  /**
   * The operator's flag, set only when given: false registers (or turns) the host into a warm
   * standby that gets no work until enabled, true enables it. Left out, a new host is enabled and
   * a known one keeps the flag it has, so a rejoin never undoes `baton host enable` or `disable`;
   * a host disabled only by a drain (`draining`) is enabled again.
   */
  readonly enabled?: boolean | undefined;
  readonly ramTotalMb: number;
  readonly ramReservedMb: number;
  readonly ramFreeMb: number;
  readonly slotsMax: number;
  /** The runner's default run time limit, written by every register; left out or null: none. */
  readonly timeLimitMs?: number | null | undefined;
  /**
   * Whether the runner has an agent command for jobs enqueued without one, written by every
   * register; left out: not said (null), which placement takes as able (an older runner's row).
   */
  readonly agentCommand?: boolean | undefined;
}

/** The exact lease term a dispatcher acts under; the store refuses it once it is not current. */
export interface TermRef {
  readonly lease: string;
  readonly holder: string;
  readonly term: number;
}

export type PlaceResult =
  | { readonly ok: true; readonly job: Job }
  | { readonly ok: false; readonly reason: 'lost'; readonly job: Job | null }
  | { readonly ok: false; readonly reason: 'fenced' }
  /** The job's task waits behind a gate (or is no longer open): nothing changed. */
  | { readonly ok: false; readonly reason: 'gated'; readonly gate: TaskGate | null }
  /** The job's task waits for a task not done (`blocker`: `K (state)`): nothing changed. */
  | { readonly ok: false; readonly reason: 'blocked'; readonly blocker: string }
  /**
   * The job has no command of its own and the host's runner has no agent command (its register
   * said so: hosts.agent_command false): nothing changed (docs/decisions/0047).
   */
  | { readonly ok: false; readonly reason: 'no_agent_command' }
  /** The workspace the placement had to lock is held: by which session and job, since when. */
  | { readonly ok: false; readonly reason: 'workspace_held'; readonly holder: LockHolder };

export interface PlaceParams {
  readonly id: JobId;
  readonly host: string;
  readonly term: TermRef;
  /**
   * The workspace of an exclusive plan. The placement then also takes the workspace's lock for
   * the host's runner session and this job, in the same atomic step: both happen or neither.
   * Left out for lock mode none: no lock is read or taken.
   */
  readonly workspace?: string | undefined;
}

export interface PlaceManyParams {
  readonly term: TermRef;
  /** Distinct jobs, each as PlaceParams without the term. */
  readonly jobs: readonly Omit<PlaceParams, 'term'>[];
}

/** A pass's candidates (core/dispatch-plan.ts), read at `now` on the database clock. */
export interface DispatchCandidates {
  readonly now: Instant;
  readonly jobs: readonly DispatchCandidate[];
}

export interface SetAsideParams {
  readonly term: TermRef;
  /** Jobs whose waiting reason is recorded, as markWaiting does. */
  readonly waits: readonly { readonly id: JobId; readonly reason: string }[];
  /** Jobs put behind a backoff, as skip does. */
  readonly skips: readonly Omit<JobSkipParams, 'term'>[];
}

/** The jobs whose reason the call changed (none when fenced). */
export interface SetAsideResult {
  readonly waited: readonly JobId[];
  readonly skipped: readonly JobId[];
}

export interface JobSkipParams {
  readonly id: JobId;
  readonly term: TermRef;
  /** The waiting reason `queue list` shows, such as `SKIPPED workspace_unresolved: …`. */
  readonly reason: string;
  /** The detail of the `job:skipped` ledger entry, such as { reason, cause, fix }. */
  readonly detail: Readonly<Record<string, unknown>>;
  /** The job is not dispatched again for this long (database clock), so it does not spin. */
  readonly backoffMs: number;
}

export interface JobAttachParams {
  readonly id: JobId;
  readonly session: SessionId;
  readonly epoch: number;
  /** The session the agent runs under (it holds the task's claim). */
  readonly agentSession: SessionId;
  readonly pid: number;
}

export interface JobRequeueParams {
  readonly id: JobId;
  readonly session: SessionId;
  readonly epoch: number;
  readonly reason: string;
  readonly policy: RetryPolicy;
  /**
   * false when the agent did not fail: its own runner stopped it to shut down gracefully. The
   * job then goes back at once with its attempt given back, even its last. Default true.
   */
  readonly attemptCounts?: boolean;
}

export interface RescueParams {
  /**
   * A live session whose last heartbeat is older than its own TTL, or than this when it declared
   * none (database clock), is stale.
   */
  readonly staleAfterMs: number;
  readonly policy: RetryPolicy;
  /** At most this many sessions per sweep. */
  readonly limit?: number | undefined;
}

export interface RescueReport {
  readonly sessions: readonly SessionId[];
  readonly claimsReleased: number;
  /** Workspace locks the stale sessions held, released with their claims. */
  readonly locksReleased: number;
  readonly jobsRequeued: readonly JobId[];
  readonly jobsFailed: readonly JobId[];
}

export interface DispatchStore {
  readonly hosts: {
    /** Registers (or takes over) a host for a runner session; ConflictError while another live session serves it. */
    register(params: HostRegisterParams): Promise<Host>;
    /** Reports free RAM and heartbeats the session; false once the session no longer serves the host. */
    heartbeat(params: {
      readonly name: string;
      readonly session: SessionId;
      readonly ramFreeMb: number;
      /** Free and total space of the runner's state and log directory (MB), when it could tell. */
      readonly disk?: { readonly freeMb: number; readonly totalMb: number } | null | undefined;
    }): Promise<boolean>;
    /**
     * Enables a host, or disables it into a warm standby, with its ledger row; NotFoundError for an
     * unknown host. Judged in the one guarded statement: a host that has that flag already, and no
     * drain behind it, is left as it is, with no ledger row (`changed` false). A disable of a host
     * disabled by a drain changes it (the next `baton up` there no longer enables it).
     */
    setEnabled(params: {
      readonly name: string;
      readonly enabled: boolean;
      readonly by?: SessionId | undefined;
      /** Who asked, in words (`alice@box`, `token t1`): the ledger row's `by`. */
      readonly actor?: string | undefined;
    }): Promise<HostToggle>;
    /**
     * Removes a host no `baton up` serves and no job runs on, with a `host:retired` ledger row;
     * NotFoundError for an unknown host. Judged in the one guarded statement: a host whose runner
     * session is live (live or silent) or with claimed or running jobs is left as it is, unrecorded.
     * A later register of the name makes it again, as a new host.
     */
    retire(params: {
      readonly name: string;
      readonly by?: SessionId | undefined;
      readonly actor?: string | undefined;
    }): Promise<HostRetire>;
    /**
     * The serving runner's drain: its host, while enabled and served by this live session, is
     * disabled and marked draining, with a `host:disabled` ledger row (`by: drain`), so no
     * dispatcher places on it. False, changing nothing, for a host already disabled (an operator's
     * flag stays the operator's) or not served by this live session.
     */
    drain(params: { readonly name: string; readonly session: SessionId }): Promise<boolean>;
    /** Every host with its live load (active jobs, promised and pending RAM). */
    list(): Promise<readonly Host[]>;
    /**
     * The fleet as a placement sees it (core/capacity.ts): the enabled hosts with a free slot,
     * with their load, in name order, and the counts and newest heartbeat that say why a job fits
     * nowhere; equal to fleetOf(list()) read at one instant. What a dispatcher pass reads: a
     * saturated fleet answers without sending its hosts.
     */
    fleet(): Promise<Fleet>;
    /**
     * Whether an enabled host has a live runner that runs jobs enqueued without a command (its
     * register said it has an agent command, or did not say: an older runner); decision 0047.
     */
    agentCommandLive(): Promise<boolean>;
    /** Records the serving runner's containment; false unless that live session serves the host. */
    setContainment(params: HostContainmentParams): Promise<boolean>;
  };

  readonly dispatch: {
    /**
     * Queued jobs of open tasks whose backoff has passed, in dispatch order (priority, queued_at,
     * id), each with its task's gate (a gated one is not placed: place answers `gated`).
     */
    queued(params: { readonly limit: number }): Promise<readonly QueuedJob[]>;
    /**
     * queued → claimed on `host`, assigned to the host's runner session, bumping the epoch and
     * attempt; refused as `fenced` unless `term` is the live lease term, `lost` if the job moved.
     * With `workspace`, the same step grants the workspace's lock (holder: the host's runner
     * session, job: this job, audited `lock:acquired`), or answers `workspace_held` and changes
     * nothing when any live lock is on it. Checked in this order: fenced, gated (the task waits
     * behind a gate or is no longer open), an unknown workspace (NotFoundError), no_agent_command
     * (a job without a command on a host whose runner has none), workspace_held, lost. The lock
     * is released by the store in the same step as the job's finish, requeue or cancel (of a
     * running job: by its runner once the agent is dead, workspaceLocks.releaseJob), and with its
     * holder's session (end or rescue).
     */
    place(params: PlaceParams): Promise<PlaceResult>;
    /**
     * The first `limit` queued jobs that may run (their task open, ungated and waiting for no
     * task), however many jobs of gated or blocked tasks come before them, those with a command
     * and those without counted apart (up to `limit` of each: decision 0047, review fixes), and,
     * for their reasons,
     * the gated or blocked ones among the first `limit` queued jobs of open tasks; each with its
     * task's gate and first unfinished dependency, workspace requirements, assignee agent (when
     * it names one), project, and the workspaces those bind with their live locks: what a
     * dispatcher pass decides on (core/dispatch-plan.ts), in one read, with the database's time.
     */
    candidates(params: { readonly limit: number }): Promise<DispatchCandidates>;
    /**
     * Places many jobs as `place` places one, each guarded and answered on its own (results in
     * the order asked), every placement with its ledger rows; in one statement (PostgreSQL) or
     * in transactions of a bounded number of jobs (SQLite, so that no synchronous step grows with
     * the batch). A term that is not live answers `fenced` for every job not placed yet. An
     * unknown workspace throws NotFoundError before anything is placed.
     */
    placeMany(params: PlaceManyParams): Promise<readonly PlaceResult[]>;
    /**
     * Records many waiting reasons (as markWaiting) and skips (as skip, each audited when its
     * reason changes) in one step under the term; nothing when the term is not live.
     */
    setAside(params: SetAsideParams): Promise<SetAsideResult>;
    /** Records why a queued job waits; false when fenced or the job is no longer queued. */
    markWaiting(params: {
      readonly id: JobId;
      readonly reason: string;
      readonly term: TermRef;
    }): Promise<boolean>;
    /**
     * Puts a queued job back behind a backoff with a reason, because the dispatcher could not
     * place it (its workspace plan is unresolved). Audited `job:skipped` when the reason differs
     * from the job's current one, so a job that stays unresolved does not flood the ledger. false
     * when fenced or the job is no longer queued.
     */
    skip(params: JobSkipParams): Promise<boolean>;
    /** Jobs claimed for this runner session and not yet started. */
    assigned(session: SessionId): Promise<readonly Job[]>;
    /** Records the agent's session and pid on a running job, guarded by (session, epoch). */
    attach(params: JobAttachParams): Promise<JobTransitionResult>;
    /**
     * Gives a claimed or running job back to the queue after a crash (its agent died of a signal
     * nobody sent on purpose), with backoff; fails it instead once attempts are exhausted. With
     * `attemptCounts: false` (its runner shutting down), at once, the attempt given back.
     * Guarded by (session, epoch); `lost` when the job moved on. Releases the job's workspace
     * lock in the same step, as do jobs.finish and jobs.cancel.
     */
    requeue(params: JobRequeueParams): Promise<JobTransitionResult>;
  };

  readonly recovery: {
    /**
     * Marks live sessions whose heartbeats stopped (past their own TTL) as stale, end_reason
     * `rescued` in the same write, releases their claims and workspace locks (`recovered`, in the
     * same step as the mark) and requeues their jobs with backoff, or
     * fails them once attempts run out. Every step is guarded by what it observed, so two sweeps
     * racing each other are safe.
     */
    rescueStale(params: RescueParams): Promise<RescueReport>;
  };
}
