/**
 * What the dashboard needs, as a port of its own: the dashboard reaches neither the store nor
 * the coordinator (test/tidy.test.ts), so the composition root hands it the coordinator's
 * read use cases (`coordinator.views`), which satisfy `DashboardReads` as they are.
 */
import type { Context } from 'hono';
import type { SignedIn } from './login-page.js';
import type { SessionReport } from '../core/session-report.js';
import type { AuditEntry } from '../core/audit-event.js';
import type { Job } from '../core/job.js';
import type { HostCapacity } from '../core/capacity.js';
import type { HostJudgement } from '../core/host-liveness.js';
import type { Session, SessionKind } from '../core/session.js';
import type { Task, TaskEvent } from '../core/task.js';
import type { Holder } from '../core/claim.js';
import type { Effect } from '../core/effect.js';
import type { Instant } from '../core/time.js';
import type { WorkspaceLock } from '../core/workspace-lock.js';
import type { Workspace } from '../core/workspace-plan.js';

export interface Page<T> {
  readonly items: readonly T[];
  readonly next: number | null;
}

export interface ClaimRow {
  readonly key: string;
  readonly epoch: number;
  readonly claimedAt: Instant;
  readonly heartbeatAt: Instant;
  readonly heartbeatAgeMs: number;
  readonly late: boolean;
  readonly session: number;
  readonly kind: SessionKind;
  readonly host: string;
  readonly pid: number;
  readonly name: string | null;
  readonly ttlMs: number | null;
  readonly job: Job | null;
  readonly locks: readonly WorkspaceLock[];
  readonly forceRelease: readonly string[];
}

export interface LeaderRow {
  readonly session: number | null;
  readonly host: string | null;
  readonly pid: number | null;
  readonly term: number | null;
  readonly expiresAt: number | null;
  /** Until the lease expires, judged on the database's clock; null when nobody leads. */
  readonly expiresInMs: number | null;
  readonly current: boolean;
  readonly changes: readonly AuditEntry[];
}

export interface HostRow extends HostCapacity, HostJudgement {
  readonly session: number | null;
  /** Disabled by its own `baton up` draining (store Host.draining), not by an operator. */
  readonly draining?: boolean;
  /** Its runner's default run time limit (store Host.timeLimitMs); null: none. */
  readonly timeLimitMs?: number | null;
  /** Whether its runner runs jobs without a command (store Host.agentCommand); null: not said. */
  readonly agentCommand?: boolean | null;
  readonly running: readonly Job[];
}

export interface WorkspaceRow {
  readonly workspace: Workspace;
  readonly lock: WorkspaceLock | null;
  readonly holder: Session | null;
  readonly waiting: readonly Job[];
}

export interface InboxRows {
  readonly now: Instant;
  readonly escalated: readonly Task[];
  readonly review: readonly Task[];
  readonly gated: readonly Task[];
  readonly shown: number;
}

/** A task at the other end of a dependency of the job's task, with its state as read. */
export interface TaskLinkRow {
  readonly key: string;
  readonly state: string;
}

/** What the job's task waits for (its dependencies) and what waits for it. */
export interface JobTaskLinks {
  readonly waitsFor: readonly TaskLinkRow[];
  readonly waitedBy: readonly TaskLinkRow[];
}

/** A row of the backlog: the task, the keys it waits for that are not done, its active job. */
export interface TaskPageRow {
  readonly id: number;
  readonly task: Task;
  readonly blockers: readonly string[];
  readonly job: { readonly id: number; readonly status: string } | null;
}

export interface TaskRows {
  /** The database's clock, to say how long each task has been in its state. */
  readonly now: Instant;
  readonly items: readonly TaskPageRow[];
  readonly next: number | null;
}

/** One task's story: its live claim's holder, jobs, history, pull requests and dependencies. */
export interface TaskStory {
  /** The database's clock, to say how long the task has been in its state. */
  readonly now: Instant;
  readonly task: Task;
  readonly holder: Holder | null;
  readonly jobs: readonly Job[];
  /** More jobs than those shown: the page links to the Queue filtered by the task's key. */
  readonly moreJobs: boolean;
  readonly history: readonly TaskEvent[];
  readonly prs: readonly Effect[];
  readonly dependencies: {
    readonly waitsFor: readonly TaskLinkRow[];
    readonly waitedBy: readonly TaskLinkRow[];
  };
}

/** Raw query-string values; the reads check them and throw InvalidInputError on bad ones. */
export type Query = Readonly<Record<string, string | undefined>>;

export interface DashboardReads {
  queue(input: Query): Promise<Page<Job>>;
  claims(lateAfterMs?: number): Promise<{ readonly now: Instant; readonly claims: readonly ClaimRow[] }>;
  leader(): Promise<LeaderRow>;
  hosts(): Promise<readonly HostRow[]>;
  workspaces(): Promise<readonly WorkspaceRow[]>;
  /** What waits for a person: escalated tasks, tasks in review, tasks behind a gate. */
  inbox(): Promise<InboxRows>;
  /** The backlog: tasks newest first by keyset, filtered by state, label, project and blocked. */
  tasks(input: Query): Promise<TaskRows>;
  /** One task's story; NotFoundError for an unknown key. */
  task(key: unknown): Promise<TaskStory>;
  job(id: unknown): Promise<{
    readonly job: Job;
    readonly history: readonly AuditEntry[];
    readonly dependencies: JobTaskLinks;
  }>;
  /** The last `max` bytes of an attempt's output stream as text; null when the database keeps none. */
  streamTail(job: number, attempt: number, max: number): Promise<string | null>;
  audit(input: Query): Promise<Page<AuditEntry>>;
  /** The session report, newest first, filtered by host, since and until (ISO). */
  sessions(input: Query): Promise<readonly SessionReport[]>;
  /** Changes whenever anything is written (the ledger's newest id). */
  changeMark(): Promise<number>;
}

export interface DashboardDeps {
  readonly reads: DashboardReads;
  /**
   * Where this process can read job output: the runner's log folder (`baton up`'s logDir, one
   * `job-<id>-attempt-<n>.log` per run). Left out (`baton serve` on another machine), the job
   * page says where the output is instead.
   */
  readonly logDir?: string | undefined;
  /** RSS in MB of a process tree on this machine, null when the pid is not here. */
  readonly rssMb?: ((pid: number) => number | null) | undefined;
  /** The host this process runs on, to tell local pids and logs from remote ones. */
  readonly hostName?: string | undefined;
  /** How often the live stream checks the database for changes; 500 ms by default. */
  readonly pollMs?: number | undefined;
  /** Where the buttons send their requests: the API's routes, `/v1/...` on this origin by default. */
  readonly apiBase?: string | undefined;
  /**
   * Whether this request may read the output of the job's current attempt, or of its earlier ones
   * (the HTTP adapter knows its token: an agent's reads its own run's alone); left out, every
   * reader that passed the read gate may.
   */
  readonly mayReadOutput?: ((context: Context, job: Job, current: boolean) => boolean) | undefined;
  /** Who reads this request's page, signed in by the sign-in cookie (the HTTP adapter knows). */
  readonly signedIn?: ((context: Context) => SignedIn | null) | undefined;
  /**
   * Whether the token this request came with still opens (the HTTP adapter knows; true for none):
   * the change stream asks every tokenRecheckMs and ends once it does not, as the token's next
   * request would be refused. Left out, a stream runs until its reader goes.
   */
  readonly tokenOpen?: ((context: Context) => Promise<boolean>) | undefined;
  /** How often the change stream asks tokenOpen; 5 s by default. */
  readonly tokenRecheckMs?: number | undefined;
}
