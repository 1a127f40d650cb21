/**
 * What every remote-capable command calls (CliApi): the Coordinator on the database, or RemoteApi
 * over Baton's HTTP API. RemoteApi extends the agent's RemoteCoordinator (remote.ts) to the rest
 * of the CLI, answering with the values the Coordinator returns, so each command prints the same
 * text, --json and exit code either way. Numbers the CLI takes as text (sessions, epochs, ids,
 * priorities) and keys in paths are checked here by the coordinator's own rules first, so bad
 * input gets the same one line before any request; text fields go as given and the server's
 * coordinator checks them with the same words.
 */
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Effects } from '../coordinator/effects.js';
import type { Cluster } from '../coordinator/cluster.js';
import { parseOlderThan } from '../core/job-retention.js';
import {
  parseEnqueue,
  parseRetryRam,
  parseSessionStart,
  parseTaskAdd,
  type TaskListInput,
} from '../coordinator/inputs.js';
import type { Ledger } from '../coordinator/ledger/ledger.js';
import type { Lifecycle } from '../coordinator/lifecycle.js';
import type { JobProgress, ProgressMarks } from '../coordinator/progress.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  parseBatch,
  parseBatchSize,
  parseJobFinish,
  HTTP_NEXT_WAIT_MAX_MS,
  parseNextWait,
  type Pull,
} from '../coordinator/pull.js';
import { checkTokenCreate, type Tokens } from '../coordinator/tokens.js';
import type { Workspaces } from '../coordinator/workspaces.js';
import type { Job, JobId } from '../core/job.js';
import type { Actor } from '../core/task.js';
import { auditByToken, hostToggled, listedTasks, listedToken } from './older-servers.js';
import { noSessionOverHttp } from './remote-target.js';
import { auditQuery, followQuery, jobListQuery, pageQuery, query, taskListQuery } from './remote-query.js';
import { validateId, validateKey } from '../core/validate.js';
import { fromWire } from '../agents/api-connection.js';
import { parseJobLog } from '../coordinator/job-log.js';
import type { LogChunk } from '../core/job-log.js';
import { RemoteCoordinator, type AgentApi } from './remote.js';
import { batchResult, type WireBatch } from './remote-batch.js';

/** The API the CLI's commands use: the Coordinator, or RemoteApi over HTTP. */
export interface CliApi extends Omit<AgentApi, 'effects' | 'lifecycle'> {
  updateTask: Coordinator['updateTask'];
  listTasks: Coordinator['listTasks'];
  startSession: Coordinator['startSession'];
  endSession: Coordinator['endSession'];
  listSessions: Coordinator['listSessions'];
  enqueue: Coordinator['enqueue'];
  listJobs: Coordinator['listJobs'];
  getJob: Coordinator['getJob'];
  jobLog: Coordinator['jobLog'];
  cancelJob: Coordinator['cancelJob'];
  /** The session named with --session, judged once; over HTTP, `command`'s route takes none: refused. */
  checkActor: (by: Actor, command: string) => Promise<Actor>;
  audit: Coordinator['audit'];
  status: Coordinator['status'];
  auditFollow: Coordinator['auditFollow'];
  readonly effects: Pick<Effects, 'record' | 'list'>;
  readonly lifecycle: Pick<
    Lifecycle,
    | 'next'
    | 'escalate'
    | 'reopen'
    | 'close'
    | 'resolve'
    | 'reject'
    | 'approve'
    | 'gate'
    | 'depend'
    | 'undepend'
    | 'escalations'
    | 'setSetting'
    | 'settings'
  >;
  readonly cluster: Pick<
    Cluster,
    'hosts' | 'leader' | 'setHostEnabled' | 'retireHost' | 'retryJob' | 'pruneJobs'
  >;
  readonly tokens: Pick<Tokens, 'create' | 'list' | 'revoke'>;
  readonly progress: Pick<ProgressMarks, 'ofJobs'>;
  readonly pull: Pick<Pull, 'next' | 'finish' | 'nextBatch' | 'batch'>;
  readonly ledger: Pick<Ledger, 'sessions'>;
  readonly workspaces: Pick<
    Workspaces,
    | 'addWorkspace'
    | 'listWorkspaces'
    | 'addAgent'
    | 'listAgents'
    | 'addProject'
    | 'listProjects'
    | 'addTask'
    | 'setTaskRequirements'
    | 'plan'
  >;
}

const enc = (key: unknown): string => encodeURIComponent(validateKey(key));

const session = (raw: unknown): number | undefined =>
  raw === undefined ? undefined : validateId('session', raw);

export class RemoteApi extends RemoteCoordinator implements CliApi {
  private get = <T>(path: string): Promise<T> => this.api.want<T>('GET', path);
  private post = <T>(path: string, body: unknown = {}): Promise<T> => this.api.want<T>('POST', path, body);

  updateTask: CliApi['updateTask'] = (input) => {
    const { title, body, url, review } = input;
    return this.post(`/v1/tasks/${enc(input.key)}/update`, { title, body, url, review });
  };

  listTasks: CliApi['listTasks'] = async (input: TaskListInput = {}) =>
    listedTasks(await this.get(`/v1/tasks${taskListQuery(input)}`), input);

  status: CliApi['status'] = () => this.get('/v1/status');

  startSession: CliApi['startSession'] = (input) => {
    const params = parseSessionStart(input);
    const body = { kind: params.kind, host: params.host, pid: params.pid, name: params.name, ttl: input.ttl };
    return this.post('/v1/sessions', body);
  };

  // A server from before jobsRequeued answers none: then no job is named. One from before operator
  // ends takes no body: it is asked again without, and records the end as it always did.
  endSession: CliApi['endSession'] = async (id, by) => {
    const path = `/v1/sessions/${validateId('session', id)}/end`;
    let answer = await this.api.ask('POST', path, by === undefined ? {} : { operator: true });
    if (!answer.ok && by !== undefined && /takes no body/.test(answer.refusal.message)) {
      answer = await this.api.ask('POST', path, {});
    }
    const { ended, jobsRequeued, ...fields } = this.api.body<Record<string, unknown>>(answer);
    const requeued = Array.isArray(jobsRequeued) ? (jobsRequeued as number[]) : [];
    return { session: fields as never, ended: ended === true, jobsRequeued: requeued };
  };

  listSessions: CliApi['listSessions'] = (filter = {}) =>
    this.get(`/v1/sessions${query({ live: filter.liveOnly === true ? 'true' : undefined })}`);

  enqueue: CliApi['enqueue'] = (input) => {
    const params = parseEnqueue(input);
    const body = {
      key: params.key,
      command: params.command,
      ramMb: params.ramMb ?? undefined, // --ram-mb 0 is no budget: sent as none
      priority: params.priority,
      attempts: params.attemptMax,
      timeLimit:
        params.timeLimitMs === undefined || params.timeLimitMs === null
          ? undefined
          : `${params.timeLimitMs}ms`,
    };
    return this.post('/v1/jobs', body);
  };

  listJobs: CliApi['listJobs'] = (input = {}) => this.get(`/v1/jobs${jobListQuery(input)}`);

  getJob: CliApi['getJob'] = (id) => this.get(`/v1/jobs/${validateId('job', id)}?progress=true`);

  /** The server reads its own log folder; the bytes come base64-encoded in `data`. */
  jobLog: CliApi['jobLog'] = async (input) => {
    const { id, attempt, offset, follow } = parseJobLog(input);
    const asked = query({ attempt, offset, follow: follow ? 'true' : undefined });
    const { data, ...chunk } = await this.get<Omit<LogChunk, 'bytes'> & { data: string }>(
      `/v1/jobs/${id}/log${asked}`,
    );
    return { ...chunk, bytes: Buffer.from(data, 'base64') };
  };

  checkActor: CliApi['checkActor'] = (by, command) => {
    noSessionOverHttp(command, by);
    return Promise.resolve(by);
  };

  cancelJob: CliApi['cancelJob'] = async (id, by) => {
    noSessionOverHttp('cancel', by);
    const answer = await this.api.ask('POST', `/v1/jobs/${validateId('job', id)}/cancel`);
    if (!answer.ok && answer.refusal.label === 'lost') {
      return { ok: false, reason: 'lost', job: fromWire<Job | null>(answer.refusal.details['job'] ?? null) };
    }
    return { ok: true, job: fromWire<Job>(this.api.body(answer)) };
  };

  audit: CliApi['audit'] = async (input = {}) =>
    auditByToken(await this.get(`/v1/audit${auditQuery(input)}`), input.token);

  // Checked here first, so bad input gets the same one line before any request. The wait cannot be
  // cut short over HTTP: `baton audit --follow` ends without waiting for the answer.
  auditFollow: CliApi['auditFollow'] = (input = {}) => this.get(`/v1/audit/follow${followQuery(input)}`);

  override readonly effects: CliApi['effects'] = {
    record: (input) => this.recordEffect(input),
    list: (input) => this.get(`/v1/tasks/${enc(input.key)}/effects${pageQuery(input)}`),
  };

  override readonly lifecycle: CliApi['lifecycle'] = {
    next: (input) => this.next(input),
    escalate: (input) => this.escalate(input),
    reopen: (input) => this.step('reopen', input, { reason: input.reason }),
    resolve: (input) => this.step('resolve', input, { reason: input.reason }),
    reject: (input) => this.step('reject', input, { reason: input.reason }),
    close: (input) => this.step('close', input, { reason: input.reason, done: input.done === true }),
    approve: (input) => this.step('approve', input, { gate: input.gate, note: input.reason }),
    gate: (input) => this.step('gate', input, { gate: input.gate }),
    depend: (input) => this.step('depend', input, { on: input.on }),
    undepend: (input) => this.step('undepend', input, { on: input.on }),
    escalations: (input = {}) => this.get(`/v1/escalations${pageQuery({ limit: input.limit })}`),
    setSetting: (input) =>
      this.post(`/v1/settings/${encodeURIComponent(String(input.name))}`, { value: String(input.value) }),
    settings: () => this.get('/v1/settings'),
  };

  readonly cluster: CliApi['cluster'] = {
    hosts: () => this.get('/v1/hosts'),
    leader: () => this.get('/v1/leader'),
    setHostEnabled: async (name, enabled, by) => {
      noSessionOverHttp(enabled ? 'host enable' : 'host disable', by);
      return hostToggled(
        await this.post(`/v1/hosts/${encodeURIComponent(String(name))}/${enabled ? 'enable' : 'disable'}`),
      );
    },
    retireHost: (name, by) => {
      noSessionOverHttp('host retire', by);
      return this.post(`/v1/hosts/${encodeURIComponent(String(name))}/retire`);
    },
    retryJob: (id, by, options = {}) => {
      noSessionOverHttp('retry', by);
      const ramMb = parseRetryRam(options.ramMb); // checked here, sent as the number the API takes (0: none)
      return this.post(`/v1/jobs/${validateId('job', id)}/retry`, {
        ramMb: ramMb === undefined ? undefined : (ramMb ?? 0),
      });
    },
    pruneJobs: (input, by) => {
      noSessionOverHttp('job prune', by);
      parseOlderThan(input.olderThan); // bad input refused without a request (exit 2), as on the database
      return this.post('/v1/jobs/prune', {
        olderThan: String(input.olderThan),
        dryRun: input.dryRun === true,
      });
    },
  };

  readonly tokens: CliApi['tokens'] = {
    create: async (input) => {
      const { host, name, expires } = input;
      const { scope, session: bound } = checkTokenCreate(input); // in the CLI's words, as on the database
      const body = { scope, session: bound ?? undefined, host, name, expires };
      const made = await this.post<{ id: string; token: string }>('/v1/tokens', body);
      const token = (await this.tokens.list()).find((listed) => listed.id === made.id);
      if (token === undefined) throw new Error(`token ${made.id} was made but is not listed`);
      return { token, secret: made.token };
    },
    list: async (params) =>
      (
        await this.get<Record<string, unknown>[]>(params?.all === true ? '/v1/tokens?all=true' : '/v1/tokens')
      ).map(listedToken),
    revoke: async (id) => {
      const { revoked, ...token } = await this.post<Record<string, unknown>>(
        `/v1/tokens/${encodeURIComponent(String(id))}/revoke`,
      );
      return { token: listedToken(token), revoked: revoked === true };
    },
  };

  /** Remote jobs come with their progress (listJobs and getJob ask for it), read back here. */
  readonly progress: CliApi['progress'] = {
    ofJobs: (jobs) => {
      const read = (job: Job): JobProgress => {
        const wire = job as Job & Partial<JobProgress>;
        return {
          progress: wire.progress ?? null,
          stalled: wire.stalled ?? false,
          lastProgressAt: wire.lastProgressAt ?? null,
        };
      };
      return Promise.resolve(new Map<JobId, JobProgress>(jobs.map((job) => [job.id, read(job)])));
    },
  };

  readonly pull: CliApi['pull'] = {
    // A long wait is asked for in turns of at most HTTP_NEXT_WAIT_MAX_MS, each within the request
    // timeout; the server's wait mark lives as long as each turn.
    next: async (sessionId, wait) => {
      const id = session(sessionId);
      if (wait === undefined)
        return (await this.post<{ job: Job | null }>('/v1/jobs/next', { session: id })).job;
      const deadline = Date.now() + parseNextWait(wait);
      for (;;) {
        const turn = Math.max(0, Math.min(deadline - Date.now(), HTTP_NEXT_WAIT_MAX_MS));
        const body = { session: id, wait: `${turn}ms` };
        const asked = Date.now();
        const { job } = await this.post<{ job: Job | null }>('/v1/jobs/next', body);
        if (job !== null || Date.now() >= deadline) return job;
        // A server that answered null long before the turn was over does not wait (an older one):
        // poll it once a second instead of asking again at once.
        if (Date.now() - asked < turn / 2) await sleep(Math.min(1000, Math.max(0, deadline - Date.now())));
      }
    },
    finish: (input, next) => {
      const { id, ...params } = parseJobFinish(input);
      const body = {
        ...params,
        exitCode: params.exitCode ?? undefined,
        reason: params.reason ?? undefined,
        next,
      };
      return this.post(`/v1/jobs/${id}/finish`, body);
    },
    nextBatch: async (input) => {
      const sessionId = validateId('session', input.session);
      const size = parseBatchSize(input.size);
      const { leaseMs } = parseBatch({ session: sessionId, take: size, lease: input.lease });
      const body = {
        session: sessionId,
        size,
        lease: input.lease === undefined ? undefined : `${leaseMs}ms`,
      };
      return batchResult(await this.post<WireBatch>('/v1/jobs/next-batch', body));
    },
    batch: async (input) => {
      const params = parseBatch(input);
      const finish = params.finish.map((entry) => ({
        id: entry.id,
        epoch: entry.epoch,
        status: entry.status,
        exitCode: entry.exitCode ?? undefined,
        reason: entry.reason ?? undefined,
      }));
      const lease = input.lease === undefined ? undefined : `${params.leaseMs}ms`;
      const body = { session: params.session, finish, next: params.take, lease };
      return batchResult(await this.post<WireBatch>('/v1/jobs/finish-batch', body));
    },
  };

  readonly ledger: CliApi['ledger'] = {
    sessions: (input = {}) => this.get(`/v1/report/sessions${query({ ...input })}`),
  };

  readonly workspaces: CliApi['workspaces'] = {
    // The route's fields only (its body is strict): the ledger's `by` is the token's, not sent.
    addWorkspace: ({ name, path, kind }) => this.post('/v1/workspaces', { name, path, kind }),
    listWorkspaces: () => this.get('/v1/workspaces'),
    addAgent: ({ name, role, department, workspace }) =>
      this.post('/v1/agents', { name, role, department, workspace }),
    listAgents: () => this.get('/v1/agents'),
    addProject: ({ name, primaryWorkspace }) => this.post('/v1/projects', { name, primaryWorkspace }),
    listProjects: () => this.get('/v1/projects'),
    addTask: async (input) => {
      const params = parseTaskAdd(input);
      const { key, title, priority, project, assignee, labels, body, url, after } = params;
      const review =
        params.reviewRequired === undefined ? undefined : params.reviewRequired ? 'required' : 'none';
      const fields = { key, title, priority, project, assignee, labels, body, url, review, after };
      const { requiresFilesystem, workspace } = input;
      const answer = await this.post<Record<string, unknown>>('/v1/tasks', {
        ...fields,
        requiresFilesystem,
        workspace,
      });
      const { requiresFilesystem: rf, workspace: ws, ...task } = answer;
      return {
        task: task as never,
        requirements: {
          key: params.key,
          requiresFilesystem: rf === true,
          workspace: (ws ?? null) as string | null,
        },
      };
    },
    setTaskRequirements: (input) => {
      const { requiresFilesystem, workspace } = input;
      return this.post(`/v1/tasks/${enc(input.key)}/requirements`, { requiresFilesystem, workspace });
    },
    plan: (input) => this.get(`/v1/tasks/${enc(input.key)}/plan${query({ agent: input.agent })}`),
  };

  /** A step of task `input.key`'s lifecycle, with the session its actor names (the route's `session`). */
  private step(verb: string, input: { key: unknown; by: Actor }, body: object): Promise<never> {
    return this.post(`/v1/tasks/${enc(input.key)}/${verb}`, { ...body, session: input.by.session });
  }
}
