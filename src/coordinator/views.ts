/**
 * What the operator's surface reads (the dashboard, /metrics): each view is a few store reads,
 * shaped for display. Inputs arrive raw from a query string and are checked here, as every
 * use case checks its own.
 */
import type { TaskDependencies } from '../store/lifecycle-store.js';
import type { AuditEntry } from '../core/audit-event.js';
import { AUDIT_TYPES } from '../core/audit-event.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import { JOB_STATES, type Job, type JobState } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { SessionReport } from '../core/session-report.js';
import type { Task } from '../core/task.js';
import type { Instant } from '../core/time.js';
import { validateId, validateInteger, validateKey, validateName, validateOneOf } from '../core/validate.js';
import type { WorkspaceLock } from '../core/workspace-lock.js';
import type { Workspace } from '../core/workspace-plan.js';
import { DISPATCHER_LEASE } from '../core/lease.js';
import { joinOutput, textStart } from '../core/output-stream.js';
import type { LiveClaim, StoreStats } from '../store/observe-store.js';
import type { Store } from '../store/store.js';
import { Cluster, type JudgedHost, type LeaderDetail } from './cluster.js';
import { withHeldReasons } from './held-reasons.js';
import { jobNotFound } from './job-retention.js';
import type { RetentionState } from '../store/retention-store.js';
import { taskDetail, tasksPage, type TaskDetail, type TaskPage, type TasksInput } from './task-views.js';

const PAGE_MAX = 200;
/** A claim whose holder has not beaten for this long (and declared no TTL) is shown late. */
const LATE_AFTER_MS_DEFAULT = 10_000;
const TERM_CHANGES_SHOWN = 10;
const WAITING_SCANNED = 500;

export interface QueueInput {
  readonly status?: unknown;
  readonly host?: unknown;
  readonly key?: unknown;
  readonly before?: unknown;
  readonly limit?: unknown;
}

export interface SessionsInput {
  readonly host?: unknown;
  readonly since?: unknown;
  readonly until?: unknown;
  readonly limit?: unknown;
}

export interface Page<T> {
  readonly items: readonly T[];
  /** The keyset of the next page (pass it as `before`), or null at the end. */
  readonly next: number | null;
}

export interface ClaimView extends LiveClaim {
  readonly heartbeatAgeMs: number;
  /** The holder is past its TTL, or, without one, silent for longer than the late threshold. */
  readonly late: boolean;
  /** Workspace locks the holder's session or the claim's job has. */
  readonly locks: readonly WorkspaceLock[];
  /** What a force-release would do, step by step. */
  readonly forceRelease: readonly string[];
}

export interface LeaderView extends LeaderDetail {
  /** The newest term changes (`lease:acquired` of the dispatcher lease), newest first. */
  readonly changes: readonly AuditEntry[];
}

export type HostView = JudgedHost & { readonly running: readonly Job[] };

export interface WorkspaceView {
  readonly workspace: Workspace;
  readonly lock: WorkspaceLock | null;
  readonly holder: Session | null;
  /** Queued jobs whose reason says they wait for this workspace. */
  readonly waiting: readonly Job[];
}

/** What waits for a person: escalated tasks, tasks in review, tasks behind a gate. */
export interface InboxView {
  /** The database's clock, to say how long each has waited. */
  readonly now: Instant;
  /** Oldest first. */
  readonly escalated: readonly Task[];
  /** Longest in review first. */
  readonly review: readonly Task[];
  /** By priority, then key. */
  readonly gated: readonly Task[];
  /** Tasks of each list read, at most: a full list says more wait. */
  readonly shown: number;
}

export interface JobView {
  readonly job: Job;
  /** The job's ledger rows, oldest first: claims, starts, requeues, the finish. */
  readonly history: readonly AuditEntry[];
  /** What the job's task waits for and what waits for it (task dependencies). */
  readonly dependencies: TaskDependencies;
}

export interface AuditInput {
  readonly key?: unknown;
  readonly session?: unknown;
  readonly host?: unknown;
  readonly job?: unknown;
  readonly type?: unknown;
  readonly before?: unknown;
  readonly limit?: unknown;
}

const optional = <T>(value: unknown, check: (raw: unknown) => T): T | undefined =>
  value === undefined || value === '' ? undefined : check(value);
const pageLimit = (value: unknown, fallback: number): number =>
  optional(value, (raw) => validateInteger('limit', raw, 1, PAGE_MAX)) ?? fallback;

/** An ISO date or time from a query string, as an instant. */
function isoTime(name: string, value: unknown): Instant {
  const at = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(at)) {
    throw new InvalidInputError(
      `${name} must be an ISO date or time, got ${JSON.stringify(value)}`,
      `for example ${name}=2026-12-01 or ${name}=2026-12-01T09:30:00Z`,
    );
  }
  return at;
}

function statuses(value: unknown): JobState[] {
  const raw = typeof value === 'string' ? value.split(',').map((status) => status.trim()) : value;
  if (!Array.isArray(raw)) return [validateOneOf('job status', raw, JOB_STATES)];
  return [...new Set(raw.map((status: unknown) => validateOneOf('job status', status, JOB_STATES)))];
}

/** What ending this claim by force does, in the order it happens (issue 17, item 5). */
function forceReleasePlan(claim: LiveClaim, locks: readonly WorkspaceLock[]): string[] {
  const steps = [
    `end session ${claim.session}'s claim on ${claim.key} at epoch ${claim.epoch}; its later writes are fenced`,
  ];
  for (const lock of locks) {
    steps.push(`release workspace ${lock.workspace} (lock epoch ${lock.epoch})`);
  }
  if (claim.job !== null && claim.job.status !== 'queued') {
    steps.push(
      `stop job ${claim.job.id} on ${claim.job.host ?? '?'}: the runner kills its agent's processes`,
    );
  }
  steps.push('write claim:force_released with who, why and the fenced epoch');
  return steps;
}

export class Views {
  constructor(private readonly store: Store) {}

  async queue(input: QueueInput = {}): Promise<Page<Job>> {
    const limit = pageLimit(input.limit, 50);
    const jobs = await this.store.observe.jobsPage({
      status: optional(input.status, statuses),
      host: optional(input.host, (value) => validateName('host', value)),
      key: optional(input.key, validateKey),
      beforeId: optional(input.before, (value) => validateId('job', value)),
      limit,
    });
    const items = await withHeldReasons(this.store, jobs);
    return { items, next: jobs.length === limit ? (jobs.at(-1)?.id ?? null) : null };
  }

  async claims(lateAfterMs = LATE_AFTER_MS_DEFAULT): Promise<{ now: Instant; claims: readonly ClaimView[] }> {
    const [live, now, locks] = await Promise.all([
      this.store.observe.liveClaims(),
      this.store.now(),
      this.locks(),
    ]);
    const claims = live.map((claim): ClaimView => {
      const age = Math.max(0, now - claim.heartbeatAt);
      // A run's lock is taken by the runner's session for the job; a lock taken by hand, by the
      // holder's own session.
      const held = locks.filter(
        (lock) => lock.session === claim.session || (claim.job !== null && lock.jobId === claim.job.id),
      );
      return {
        ...claim,
        heartbeatAgeMs: age,
        late: age > (claim.ttlMs ?? lateAfterMs),
        locks: held,
        forceRelease: forceReleasePlan(claim, held),
      };
    });
    return { now, claims };
  }

  async leader(): Promise<LeaderView> {
    const detail = await new Cluster(this.store).leader();
    const changes = await this.store.audit.list({
      type: 'lease:acquired',
      newestFirst: true,
      limit: TERM_CHANGES_SHOWN * 4,
    });
    const dispatcher = changes.filter((entry) => entry.detail['name'] === DISPATCHER_LEASE);
    return { ...detail, changes: dispatcher.slice(0, TERM_CHANGES_SHOWN) };
  }

  /** The hosts judged as `baton hosts` judges them (on the database's clock), with their running jobs. */
  async hosts(): Promise<readonly HostView[]> {
    const hosts = await new Cluster(this.store).hosts();
    return Promise.all(
      hosts.map(async (host) => ({
        ...host,
        running: await this.store.observe.jobsPage({
          status: ['claimed', 'running'],
          host: host.name,
          limit: 20,
        }),
      })),
    );
  }

  /** The inbox (InboxView): three reads, each of at most PAGE_MAX tasks. */
  async inbox(): Promise<InboxView> {
    const [now, escalated, review, gated] = await Promise.all([
      this.store.now(),
      this.store.lifecycle.escalations({ limit: PAGE_MAX }),
      this.store.tasks.list({ state: 'in_review', limit: PAGE_MAX }),
      this.store.tasks.list({ state: 'open', gated: true, limit: PAGE_MAX }),
    ]);
    const longest = [...review].sort(
      (one, other) => one.stateAt - other.stateAt || (one.key < other.key ? -1 : 1),
    );
    return { now, escalated, review: longest, gated, shown: PAGE_MAX };
  }

  /** The backlog: tasks newest first by keyset, with their blockers and active job (task-views.ts). */
  tasks(input: TasksInput = {}): Promise<TaskPage> {
    return tasksPage(this.store, input);
  }

  /** One task's story as `baton task show` prints it, with the database's clock; NotFoundError if unknown. */
  async task(key: unknown): Promise<TaskDetail & { readonly now: Instant }> {
    const [detail, now] = await Promise.all([taskDetail(this.store, key), this.store.now()]);
    return { ...detail, now };
  }

  async workspaces(): Promise<readonly WorkspaceView[]> {
    const [workspaces, waiting] = await Promise.all([
      this.store.workspaces.list(),
      this.store.observe.jobsPage({ status: ['queued'], limit: WAITING_SCANNED }),
    ]);
    return Promise.all(
      workspaces.map(async (workspace) => {
        const lock = await this.store.workspaceLocks.current(workspace.name);
        const holder = lock === null ? null : await this.store.sessions.get(lock.session);
        const prefix = `waiting for workspace ${workspace.name},`;
        return {
          workspace,
          lock,
          holder,
          waiting: waiting.filter((job) => job.reason?.startsWith(prefix) === true).reverse(),
        };
      }),
    );
  }

  async job(id: unknown): Promise<JobView> {
    const checked = validateId('job', id);
    const stored = await this.store.jobs.get(checked);
    if (stored === null) throw await jobNotFound(this.store, checked);
    const [job = stored] = await withHeldReasons(this.store, [stored]);
    const history = await this.store.audit.list({ jobId: checked, limit: 1000 });
    return { job, history, dependencies: await this.store.lifecycle.dependencies(job.key) };
  }

  /** The ledger's page; no rows for a task no one added (its first page) is a typo: NotFoundError, as in `audit`. */
  async audit(input: AuditInput = {}): Promise<Page<AuditEntry>> {
    const limit = pageLimit(input.limit, 100);
    const key = optional(input.key, validateKey);
    const entries = await this.store.audit.list({
      key,
      session: optional(input.session, (value) => validateId('session', value)),
      host: optional(input.host, (value) => validateName('host', value)),
      jobId: optional(input.job, (value) => validateId('job', value)),
      type: optional(input.type, (value) => validateOneOf('audit type', value, AUDIT_TYPES)),
      beforeId: optional(input.before, (value) => validateId('audit', value)),
      newestFirst: true,
      limit,
    });
    if (
      entries.length === 0 &&
      key !== undefined &&
      input.before === undefined &&
      (await this.store.tasks.get(key)) === null
    )
      throw new NotFoundError('task', key, 'add it with `baton task add`');
    return { items: entries, next: entries.length === limit ? (entries.at(-1)?.id ?? null) : null };
  }

  /**
   * The session report (issue 21's `baton report sessions`): who worked, on which host, on what,
   * and how each session ended, newest first; `since` and `until` are ISO times.
   */
  async sessions(input: SessionsInput = {}): Promise<readonly SessionReport[]> {
    return this.store.reports.sessions({
      host: optional(input.host, (value) => validateName('host', value)),
      since: optional(input.since, (value) => isoTime('since', value)),
      until: optional(input.until, (value) => isoTime('until', value)),
      limit: pageLimit(input.limit, 100),
    });
  }

  /** Counts for /metrics, from the database. */
  stats(): Promise<StoreStats> {
    return this.store.observe.stats();
  }

  /** What job retention has removed, by state, for /metrics (decision 0039). */
  jobsPruned(): Promise<RetentionState> {
    return this.store.retention.state();
  }

  /** The dispatcher lease as the store has it (term and expiry even when nobody leads). */
  dispatcherLease(): ReturnType<Store['leases']['get']> {
    return this.store.leases.get(DISPATCHER_LEASE);
  }

  /**
   * The last `max` bytes (at most) of an attempt's output stream (core/output-stream.ts) as text,
   * from a line's start (or a character's), null when the database keeps none of it: the job page's
   * output for a run on another host.
   */
  async streamTail(job: number, attempt: number, max: number): Promise<string | null> {
    const { size } = await this.store.output.read({ job, attempt, offset: Number.MAX_SAFE_INTEGER });
    if (size === 0) return null;
    // A read answers at most 64 rows: read on to the end, from a start the window still holds.
    let offset = Math.max(0, size - max);
    let from: number | null = null;
    const parts: Uint8Array[] = [];
    while (offset < size) {
      const span = joinOutput(await this.store.output.read({ job, attempt, offset }), offset, size - offset);
      if (span === null || span.bytes.length === 0) break;
      if (from === null || span.from !== offset) {
        // The first bytes, or a gap (the window moved on): the text starts here.
        from = span.from;
        parts.length = 0;
      }
      parts.push(span.bytes);
      offset = span.from + span.bytes.length;
    }
    if (from === null) return null;
    const bytes = Buffer.concat(parts);
    return bytes.subarray(from === 0 ? 0 : textStart(bytes)).toString('utf8');
  }

  /** The newest ledger row's id: a cheap probe of "has anything changed". */
  changeMark(): Promise<number> {
    return this.store.observe.auditMaxId();
  }

  private async locks(): Promise<WorkspaceLock[]> {
    const workspaces = await this.store.workspaces.list();
    const locks = await Promise.all(
      workspaces.map((workspace) => this.store.workspaceLocks.current(workspace.name)),
    );
    return locks.filter((lock): lock is WorkspaceLock => lock !== null);
  }
}
