/**
 * The one API the adapters (CLI, HTTP) call. It checks raw input (see inputs.ts) before anything
 * reaches the store, turns "absent" into NotFoundError, and otherwise hands over to the Store,
 * which owns every rule about who may hold what. Expected outcomes (held, fenced, lost) come back
 * as values so each adapter can tell the user who holds the thing now.
 */
import { checkedActor } from './actor-session.js';
import type { Instant } from '../core/time.js';
import type { AuditEntry } from '../core/audit-event.js';
import { followAudit, type AuditFollowInput, type AuditFollowPage } from './audit-follow.js';
import type { ClaimResult, FencedResult } from '../core/claim.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import { jobNotFound } from './job-retention.js';
import type { Job, JobTransitionResult } from '../core/job.js';
import type { ListedSession, Session } from '../core/session.js';
import type { Task } from '../core/task.js';
import { validateId, validateKey } from '../core/validate.js';
import type { SessionEndReport } from '../store/rescue.js';
import type { ClaimForceReleaseResult, ListedTask, Store } from '../store/store.js';
import type { LiveClaim } from '../store/observe-store.js';
import { Cluster } from './cluster.js';
import { refuseUnhandedOut, type Claimer } from './handed-out.js';
import { Effects } from './effects.js';
import { ProgressMarks } from './progress.js';
import { Ledger } from './ledger/ledger.js';
import { Pull } from './pull.js';
import { fleetStatus, type FleetStatus } from './status.js';
import { Views } from './views.js';
import { withHeldReasons } from './held-reasons.js';
import { warnedEnqueue, type EnqueueAnswer } from './agent-command-wait.js';
import { taskDetail, type TaskDetail } from './task-views.js';
import { Tokens, type RefusalCaps } from './tokens.js';
import { Workspaces } from './workspaces.js';
import { Lifecycle, triaged } from './lifecycle.js';
import { readJobLog, type JobLogInput } from './job-log.js';
import type { OutputRead } from '../core/output-stream.js';
import type { OutputReadParams } from '../store/output-store.js';
import type { LogChunk } from '../core/job-log.js';
import type { Actor } from '../core/task.js';
import {
  parseAudit,
  parseClaim,
  parseEnqueue,
  parseForceRelease,
  parseHeartbeat,
  parseJobList,
  parseRelease,
  parseSessionStart,
  parseTaskAdd,
  parseTaskList,
  type AuditInput,
  type ClaimInput,
  type EnqueueInput,
  type ForceReleaseInput,
  type HeartbeatInput,
  type JobListInput,
  type ReleaseInput,
  type SessionStartInput,
  type TaskAddInput,
  type TaskListInput,
} from './inputs.js';

export type { TaskDetail } from './task-views.js';

/** A session's live claim as its caller sees it (Coordinator.sessionClaims). */
export type SessionClaim = Pick<LiveClaim, 'key' | 'epoch' | 'host' | 'claimedAt' | 'heartbeatAt'>;

export interface TaskUpdateInput {
  readonly key: unknown;
  readonly title?: unknown;
  readonly body?: unknown;
  readonly url?: unknown;
  readonly labels?: unknown;
  readonly review?: unknown;
  readonly by: Actor;
}

/** `ended` false when the session had already ended; `jobsRequeued`, the pull jobs it gave back. */
export interface SessionEndResult extends SessionEndReport {
  readonly session: Session;
}

export class Coordinator {
  /** `refusals`: caps on auth:refused rows other than this process's own (a test's). */
  constructor(
    private readonly store: Store,
    private readonly refusals?: RefusalCaps,
  ) {}

  /** Pull mode: a script taking and finishing queued jobs itself. */
  get pull(): Pull {
    return new Pull(this.store);
  }

  /** Hosts, retries, the leader and `baton up`. */
  get cluster(): Cluster {
    return new Cluster(this.store);
  }

  /** Fenced side effects under a claim. */
  get effects(): Effects {
    return new Effects(this.store);
  }

  /** Progress marks, apart from heartbeats, and stalled jobs. */
  get progress(): ProgressMarks {
    return new ProgressMarks(this.store);
  }

  /** The task lifecycle: reopen, close, approve, reject, escalations, gates, `next`, settings. */
  get lifecycle(): Lifecycle {
    return new Lifecycle(this.store);
  }

  /** What the dashboard and /metrics read: queue pages, live claims, hosts, the ledger stream. */
  get views(): Views {
    return new Views(this.store);
  }

  /** API tokens: create, list, revoke; the HTTP adapter's checks and refusals. */
  get tokens(): Tokens {
    return new Tokens(this.store, this.refusals);
  }

  /** The ledger's tamper evidence, export, retention, commit provenance and session report. */
  get ledger(): Ledger {
    return new Ledger(this.store);
  }

  /** The workspace model: workspaces, agents, projects, a task's requirements and its plan. */
  get workspaces(): Workspaces {
    return new Workspaces(this.store);
  }

  /** The fleet at a glance (`baton status`, GET /v1/status): leader, hosts, jobs, claims, the inbox. */
  status(): Promise<FleetStatus> {
    return fleetStatus(this.store);
  }

  /** The database's clock (for /readyz, which `baton doctor --api` reads it from). */
  now(): Promise<Instant> {
    return this.store.now();
  }

  /** Whether the database has every migration this code knows (for /readyz). */
  schema(): Promise<{ readonly applied: number; readonly known: number }> {
    return this.store.schema();
  }

  /** Adds a task; the vague-issue rule may add it escalated (`insufficient-info`). */
  async addTask(input: TaskAddInput): Promise<Task> {
    return this.store.tasks.add(await triaged(this.store, parseTaskAdd(input)));
  }

  /** Changes a task's title, body, URL, labels or review requirement (an importer, a person). */
  updateTask(input: TaskUpdateInput): Promise<Task> {
    const fields = parseTaskAdd({ ...input, key: input.key });
    return this.store.tasks.update({
      key: fields.key,
      title: fields.title,
      body: fields.body,
      url: fields.url,
      labels: fields.labels,
      reviewRequired: fields.reviewRequired,
      by: input.by,
    });
  }

  async getTask(key: unknown): Promise<Task> {
    const checked = validateKey(key);
    const task = await this.store.tasks.get(checked);
    if (task === null) throw new NotFoundError('task', checked, 'add it with `baton task add`');
    return task;
  }

  /** The task with its live claim holder, recent jobs, history, pull requests and dependencies. */
  showTask(key: unknown): Promise<TaskDetail> {
    return taskDetail(this.store, key);
  }

  /**
   * Tasks by priority, then key, at most `limit`, after the task `after` names (the next page);
   * NotFoundError for a project or a label no task has (a typo, not an empty filter), as `next`
   * refuses them; InvalidInputError for an `after` no task has (tasks are never removed).
   */
  async listTasks(input: TaskListInput = {}): Promise<readonly ListedTask[]> {
    const params = parseTaskList(input);
    const tasks = await this.store.tasks.list(params);
    if (tasks.length > 0) return tasks;
    if (params.after !== undefined && (await this.store.tasks.get(params.after)) === null) {
      throw new InvalidInputError(
        `after must be the key of a task, and no task has the key ${JSON.stringify(params.after)}`,
        'give the key of the last task the page before listed, as its next-page line says',
      );
    }
    await this.lifecycle.refuseUnknown(params.project, params.label);
    return tasks;
  }

  startSession(input: SessionStartInput): Promise<Session> {
    return this.store.sessions.start(parseSessionStart(input));
  }

  /**
   * Ends the session, releases its claims and queues its pull jobs again; NotFoundError for an
   * unknown id. With `by`, someone other than the session ended it: recorded as `operator`, and who.
   */
  async endSession(id: unknown, by?: Actor): Promise<SessionEndResult> {
    const checked = validateId('session', id);
    const { ended, jobsRequeued } = await this.store.sessions.end(
      checked,
      by === undefined ? 'stopped' : 'operator',
      by?.name,
    );
    return { session: await this.getSession(checked), ended, jobsRequeued };
  }

  async getSession(id: unknown): Promise<Session> {
    const checked = validateId('session', id);
    const session = await this.store.sessions.get(checked);
    if (session === null) {
      throw new NotFoundError('session', String(checked), 'start one with `baton session start`');
    }
    return session;
  }

  /**
   * The session's live claims, oldest heartbeat first, as its caller may see them (the task, the
   * epoch, the host and the times; decision 0060); NotFoundError for an unknown session.
   */
  async sessionClaims(id: unknown): Promise<readonly SessionClaim[]> {
    const session = await this.getSession(id);
    return (await this.store.observe.liveClaims())
      .filter((claim) => claim.session === session.id)
      .map(({ key, epoch, host, claimedAt, heartbeatAt }) => ({ key, epoch, host, claimedAt, heartbeatAt }));
  }

  listSessions(options: { readonly liveOnly?: boolean } = {}): Promise<readonly ListedSession[]> {
    return this.store.sessions.list({ liveOnly: options.liveOnly === true, agentPids: true });
  }

  /** A liveness signal; with a claim named, also proof that the claim is still current. */
  heartbeat(input: HeartbeatInput): Promise<FencedResult> {
    return this.store.sessions.heartbeat(parseHeartbeat(input));
  }

  /**
   * Grants the task to the session. An agent's claim (`claimer`, the HTTP adapter's judgement of
   * its token) takes only work Baton would hand out: not a task behind a gate or waiting for a task
   * not done, unless its session holds it already (handed-out.ts); a person's takes any open task.
   */
  async claim(input: ClaimInput, claimer: Claimer = 'person'): Promise<ClaimResult> {
    const params = parseClaim(input);
    if (claimer === 'agent') await refuseUnhandedOut(this.store, params.key, params.session);
    return this.store.claims.acquire(params);
  }

  release(input: ReleaseInput): Promise<FencedResult> {
    return this.store.claims.release(parseRelease(input));
  }

  /**
   * An operator ends the task's live claim, whoever holds it, with a reason: the holder is
   * fenced and its run cancelled (store.ts, claims.forceRelease); `no_claim` when none is live.
   */
  forceRelease(input: ForceReleaseInput): Promise<ClaimForceReleaseResult> {
    return this.store.claims.forceRelease(parseForceRelease(input));
  }

  /**
   * Queues a job for the task, creating the task if needed; returns the active job if any, and a
   * warning when the job has no command and no live host runs one (agent-command-wait.ts).
   */
  async enqueue(input: EnqueueInput): Promise<EnqueueAnswer> {
    return warnedEnqueue(this.store, await this.store.jobs.enqueue(parseEnqueue(input)));
  }

  /** Jobs as listed; a held queued job without a stored reason is given its task's (held-reasons.ts). */
  async listJobs(input: JobListInput = {}): Promise<readonly Job[]> {
    return withHeldReasons(this.store, await this.store.jobs.list(parseJobList(input)));
  }

  async getJob(id: unknown): Promise<Job> {
    const checked = validateId('job', id);
    const job = await this.store.jobs.get(checked);
    if (job === null) throw await jobNotFound(this.store, checked);
    const [explained = job] = await withHeldReasons(this.store, [job]);
    return explained;
  }

  /**
   * One chunk of a job's output from a byte offset (coordinator/job-log.ts); `logDir` is the log
   * folder this process can read (`baton up`'s, or `.baton/logs` where the command runs).
   */
  jobLog(input: JobLogInput, logDir?: string): Promise<LogChunk> {
    return readJobLog(this, logDir, input);
  }

  /** The output stream's rows of an attempt past an offset (store/output-store.ts), for jobLog. */
  readOutput(params: OutputReadParams): Promise<OutputRead> {
    return this.store.output.read(params);
  }

  /** Cancels an active job; `lost` with the job when it had already finished. */
  /** Cancels a job, naming who did it in the ledger and in the job's reason. */
  async cancelJob(id: unknown, by: Actor): Promise<JobTransitionResult> {
    const job = await this.getJob(id);
    const actor = await checkedActor(this.store, by);
    return this.store.jobs.cancel({ id: job.id, actor: actor.name, by: actor.session });
  }

  /**
   * The session an operator names with --session, judged once for a command over several ids
   * (`baton cancel 1 2 3 --session S`): NotFoundError when it does not exist, FencedError when it
   * has ended; the actor as given otherwise.
   */
  checkActor(by: Actor): Promise<Actor> {
    return checkedActor(this.store, by);
  }

  /**
   * Ledger rows, oldest first. No rows for a task no one added (its first page: no `after`) is a
   * typo, not an empty history: NotFoundError, found by one light lookup of the task alone.
   */
  async audit(input: AuditInput = {}): Promise<readonly AuditEntry[]> {
    const params = parseAudit(input);
    const entries = await this.store.audit.list(params);
    if (entries.length === 0 && params.key !== undefined && params.afterId === undefined)
      await this.getTask(params.key);
    return entries;
  }

  /** Settled ledger rows after `after`, waiting up to `wait` for one (audit-follow.ts). */
  auditFollow(input: AuditFollowInput = {}, signal?: AbortSignal): Promise<AuditFollowPage> {
    return followAudit(this.store, input, signal);
  }

  /** Who holds a lease (by default the dispatcher's), judged on the database clock. */
}
