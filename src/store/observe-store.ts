/**
 * Reads for the operator's surface (the dashboard and /metrics): a page of jobs by keyset, the
 * live claims with their holders and jobs, and counts. Each is one read on the database, so the
 * figures are the same whichever process serves them, and none takes a write lock.
 */
import type { Job, JobId, JobState } from '../core/job.js';
import type { SessionId, SessionKind } from '../core/session.js';
import type { Task, TaskGate, TaskState } from '../core/task.js';
import type { Instant } from '../core/time.js';

export interface JobPageParams {
  readonly status?: readonly JobState[] | undefined;
  readonly host?: string | undefined;
  readonly key?: string | undefined;
  /** Jobs with an id below this one (the previous page's last id); newest first. */
  readonly beforeId?: JobId | undefined;
  readonly limit: number;
}

export interface TaskPageParams {
  readonly states?: readonly TaskState[] | undefined;
  readonly project?: string | undefined;
  readonly label?: string | undefined;
  /** true: only tasks that wait for a task not done (task dependencies, docs/decisions/0035). */
  readonly blocked?: boolean | undefined;
  /** Tasks added before this one (the previous page's last row id); newest first. */
  readonly beforeId?: number | undefined;
  readonly limit: number;
}

/** A row of the backlog's page: the task, what still blocks it and its active job, read together. */
export interface TaskPageRow {
  /** The task's row id: the keyset of the next page. */
  readonly id: number;
  readonly task: Task;
  /** The keys it waits for that are not done, in key order. */
  readonly blockers: readonly string[];
  /** Its active job (queued, claimed or running), at most one. */
  readonly job: { readonly id: JobId; readonly status: JobState } | null;
}

/**
 * Why an open task's queued jobs cannot run, read when asked (observe.taskHolds): its gate, and
 * its first dependency not done as `K (state)` (the blocker the dispatcher names), either null.
 */
export interface TaskHold {
  readonly key: string;
  readonly gate: TaskGate | null;
  readonly blocker: string | null;
}

/** A live claim with what lock forensics needs: who holds it, from where, and its job. */
export interface LiveClaim {
  readonly key: string;
  readonly epoch: number;
  readonly claimedAt: Instant;
  /** The claim's own last heartbeat. */
  readonly heartbeatAt: Instant;
  readonly session: SessionId;
  readonly kind: SessionKind;
  readonly host: string;
  readonly pid: number;
  readonly name: string | null;
  readonly ttlMs: number | null;
  /** The task's active job (queued, claimed or running), if any. */
  readonly job: Job | null;
}

export interface Count<K extends string = string> {
  readonly name: K;
  readonly count: number;
}

/** A host's last report and, while its runner session is live, that session and its TTL. */
export interface HostReport {
  readonly name: string;
  readonly enabled: boolean;
  /** Disabled by its own `baton up` draining, not by an operator (dispatch-store.ts Host.draining). */
  readonly draining: boolean;
  readonly heartbeatAt: Instant;
  /** The runner session serving the host if it is still live; null otherwise. */
  readonly liveSession: { readonly id: SessionId; readonly ttlMs: number | null } | null;
}

/** The tasks in one state: how many, how many wait behind a gate, and since when the longest-standing one is in it. */
export interface TaskStateCount extends Count {
  readonly gated: number;
  readonly oldestAt: Instant;
}

/** The ledger's tamper window: rows written since the last checkpoint, and whether any key may seal. */
export interface LedgerWindow {
  /** Public keys ever registered (`baton ledger init`); one is always unretired when any is. */
  readonly keys: number;
  /**
   * Rows above the highest id a checkpoint covers, counted as ids (the newest id minus that one):
   * two index probes at any ledger size, where counting rows would read the whole ledger of a
   * database that has no key. An id a rolled-back write drew counts too.
   */
  readonly unsealedRows: number;
  /** The `at` of the first row above it (the oldest unsealed); null when every row is sealed. */
  readonly oldestUnsealedAt: Instant | null;
}

export interface StoreStats {
  readonly now: Instant;
  /**
   * Jobs present by status. This figure, jobsStarted, the claims' and tasksByState are exact and
   * come from running counts each store keeps (docs/decisions/0040): a call reads the rows added
   * since the last one and the live rows, not the whole tables.
   */
  readonly jobsByStatus: readonly Count[];
  /** Queued jobs that carry a reason (why they wait), by reason text. */
  readonly waitingByReason: readonly Count[];
  /**
   * Queued jobs without a command while no live host can run one (no enabled host with a live
   * runner session has an agent command: decision 0047's hold), over the whole queue, whatever
   * reason each one stores; `withoutReason` of them store none yet (beyond the dispatcher's
   * window, or no dispatcher ran). Both 0 while such a host is live: the count is not read then.
   */
  readonly agentCommandWait: { readonly jobs: number; readonly withoutReason: number };
  /**
   * Job runs started: `job:started` ledger rows, and `job:claimed` rows of claims that started
   * their job (`started: true`, decision 0023). Rows present: a prune lowers it, which a
   * Prometheus counter reads as a reset.
   */
  readonly jobsStarted: number;
  /**
   * Runs judged past their time limit (`job:timed_out` ledger rows, decision 0037), by who judged
   * them: `runner` (a `baton up` killed the run), `finish` (a pull worker's finish came past it),
   * `leader` (the leader's sweep failed a pull job its worker never finished); `unrecorded` for
   * rows that do not say (written before the field, or by an older `baton up` during a rolling
   * upgrade). Rows present, as jobsStarted.
   */
  readonly jobsTimedOut: readonly Count[];
  /** Claims ever granted (rows of the claims table) and those live now. */
  readonly claimsGranted: number;
  readonly claimsHeld: number;
  /** Ended claims by outcome. */
  readonly claimsByOutcome: readonly Count[];
  /** The oldest heartbeat among live claims, or null when none is held. */
  readonly oldestClaimHeartbeatAt: Instant | null;
  /** The newest ledger row's id (0 when empty): it changes whenever anything is written. */
  readonly auditMaxId: number;
  /**
   * Live claims whose holder's session has passed its TTL (SESSION_TTL_FALLBACK_MS without one) on
   * the database clock, or ended: a leader takes them back within its `--stale-after`.
   */
  readonly claimsPastTtl: number;
  /** Every host, to be judged live, silent or down as `baton hosts` judges it (core/host-liveness.ts). */
  readonly hosts: readonly HostReport[];
  /** Tasks by state (core/task.ts), in state order. */
  readonly tasksByState: readonly TaskStateCount[];
  readonly ledger: LedgerWindow;
}

export interface ObserveStore {
  readonly observe: {
    /** Jobs newest first, after the keyset `beforeId`; the primary key orders the page. */
    jobsPage(params: JobPageParams): Promise<readonly Job[]>;
    /** Tasks newest first, after the keyset `beforeId`, with their blockers and active job: one read. */
    tasksPage(params: TaskPageParams): Promise<readonly TaskPageRow[]>;
    /**
     * Of these task keys, the open tasks behind a gate or waiting for a task not done, with what
     * holds them: a probe of tasks' key and of task_deps' primary key per key.
     */
    taskHolds(keys: readonly string[]): Promise<readonly TaskHold[]>;
    /** Every live claim, oldest heartbeat first. */
    liveClaims(): Promise<readonly LiveClaim[]>;
    stats(): Promise<StoreStats>;
    /**
     * The ledger's tamper window alone, as stats() reads it (keys, unsealed rows, the oldest
     * unsealed row's time): index probes only, for `baton doctor`, which must not count the
     * ledger's rows as stats' jobsStarted does.
     */
    ledgerWindow(): Promise<LedgerWindow>;
    /** The newest ledger row's id, 0 when empty: a cheap "has anything changed" probe. */
    auditMaxId(): Promise<number>;
  };
}
