/**
 * The CLI's remote mode (issue 17, item 4): with BATON_URL and BATON_TOKEN (or --api and
 * --token), the commands an agent uses (claim, heartbeat, release, effect, task show, next,
 * escalate), and force-release, go over the HTTP API instead of opening the database. RemoteCoordinator answers them
 * with the same values the Coordinator returns, so each command prints the same text, the same
 * --json and exits with the same code either way. Input is checked here first, by the same
 * rules, so bad input is refused before any request, as it is before any write.
 */
import type { Coordinator, TaskDetail } from '../coordinator/coordinator.js';
import type { Effects } from '../coordinator/effects.js';
import {
  parseClaim,
  parseForceRelease,
  parseHeartbeat,
  parseRelease,
  type ClaimInput,
  type ForceReleaseInput,
  type HeartbeatInput,
  type ReleaseInput,
} from '../coordinator/inputs.js';
import type { EscalateInput, Lifecycle, NextInput, NextOutcome } from '../coordinator/lifecycle.js';
import type { ClaimResult, FencedResult, Holder, ReleaseResult } from '../core/claim.js';
import { InvalidInputError } from '../core/errors.js';
import type { JobState } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { ClaimForceReleaseResult } from '../store/store.js';
import type { Task } from '../core/task.js';
import { validateEpoch, validateId, validateKey, validateReason } from '../core/validate.js';
import { REASON_LENGTH_MAX } from '../core/task.js';
import { ApiConnection, fencedOf, fromWire, releasedOf, type Answer } from '../agents/api-connection.js';
import type { RemoteTarget } from './remote-target.js';

/** What the agent's commands call: the Coordinator locally, RemoteCoordinator over HTTP. */
export interface AgentApi {
  claim: Coordinator['claim'];
  release: (input: ReleaseInput) => Promise<ReleaseResult>;
  heartbeat: Coordinator['heartbeat'];
  showTask: Coordinator['showTask'];
  getSession: Coordinator['getSession'];
  forceRelease: Coordinator['forceRelease'];
  readonly effects: Pick<Effects, 'record'>;
  readonly lifecycle: Pick<Lifecycle, 'next' | 'escalate'>;
}

/** A task key as a path segment, checked first as the database mode checks it (http-client.ts). */
const key = (raw: unknown): string => encodeURIComponent(validateKey(raw));

export class RemoteCoordinator implements AgentApi {
  protected readonly api: ApiConnection;

  constructor(target: RemoteTarget) {
    this.api = new ApiConnection(target.url, target.token);
  }

  claim = async (input: ClaimInput): Promise<ClaimResult> => {
    const params = parseClaim(input);
    const answer = await this.api.ask('POST', `/v1/claims/${key(params.key)}`, { session: params.session });
    if (!answer.ok && answer.refusal.label === 'held') {
      return { ok: false, reason: 'held', holder: fromWire<Holder>(answer.refusal.details['holder']) };
    }
    const { granted, ...claim } = this.api.body<{ granted: boolean } & Record<string, unknown>>(answer);
    return { ok: true, granted, claim: fromWire(claim) };
  };

  release = async (input: ReleaseInput): Promise<ReleaseResult> => {
    const params = parseRelease(input);
    const body = { session: params.session, epoch: params.epoch, outcome: params.outcome };
    return releasedOf(this.api, await this.api.ask('POST', `/v1/claims/${key(params.key)}/release`, body));
  };

  heartbeat = async (input: HeartbeatInput): Promise<FencedResult> => {
    const params = parseHeartbeat(input);
    if (params.claim === undefined)
      return this.fenceable(await this.api.ask('POST', `/v1/sessions/${params.session}/heartbeat`));
    const body = { session: params.session, epoch: params.claim.epoch };
    return this.fenceable(await this.api.ask('POST', `/v1/claims/${key(params.claim.key)}/heartbeat`, body));
  };

  showTask = async (taskKey: unknown): Promise<TaskDetail> => {
    const detail = await this.api.want<TaskDetail>('GET', `/v1/tasks/${key(taskKey)}`);
    return {
      task: detail.task,
      claim: detail.claim,
      holder: detail.holder,
      jobs: detail.jobs,
      // A server from before the flag answers none: it never listed more than its jobs.
      moreJobs: detail.moreJobs ?? false,
      history: detail.history.map((event) => ({ ...event, on: event.on ?? null })),
      prs: detail.prs,
      // A server from before task dependencies answers none.
      dependencies: detail.dependencies ?? { waitsFor: [], waitedBy: [] },
    };
  };

  getSession = (id: unknown): Promise<Session> =>
    this.api.want<Session>('GET', `/v1/sessions/${validateId('session', id)}`);

  forceRelease = async (input: ForceReleaseInput): Promise<ClaimForceReleaseResult> => {
    const params = parseForceRelease(input);
    const answer = await this.api.ask('POST', `/v1/claims/${key(params.key)}/force-release`, {
      reason: params.reason,
    });
    if (!answer.ok && answer.refusal.label === 'no_claim') return { ok: false, reason: 'no_claim' };
    const row = this.api.body<{ holder: unknown; job: { id: number; was: JobState } | null }>(answer);
    return { ok: true, holder: fromWire<Holder>(row.holder), job: row.job };
  };

  readonly effects: AgentApi['effects'] = { record: (input) => this.recordEffect(input) };

  readonly lifecycle: AgentApi['lifecycle'] = {
    next: (input) => this.next(input),
    escalate: (input) => this.escalate(input),
  };

  protected async recordEffect(input: Parameters<Effects['record']>[0]): ReturnType<Effects['record']> {
    const body = {
      key: validateKey(input.key),
      session: validateId('session', input.session),
      epoch: validateEpoch(input.epoch),
      kind: input.kind,
      payload: input.payload,
    };
    const answer = await this.api.ask('POST', '/v1/effects', body);
    return fencedOf(answer) ?? { ok: true, effect: fromWire(this.api.body(answer)) };
  }

  protected async escalate(input: EscalateInput): ReturnType<Lifecycle['escalate']> {
    const taskKey = validateKey(input.key);
    const body = {
      reason: validateReason('reason', input.reason, REASON_LENGTH_MAX),
      session: input.session === undefined ? undefined : validateId('session', input.session),
      epoch: input.epoch === undefined ? undefined : validateEpoch(input.epoch),
    };
    const answer = await this.api.ask('POST', `/v1/tasks/${key(taskKey)}/escalate`, body);
    const fenced = fencedOf(answer);
    if (fenced !== null) return fenced;
    const reply = this.api.body<Record<string, unknown>>(answer);
    const task = Object.fromEntries(
      Object.entries(reply).filter(([name]) => name !== 'endedJob' && name !== 'endedClaimEpoch'),
    );
    const claimEpoch = (reply['endedClaimEpoch'] ?? null) as number | null;
    return {
      ok: true,
      task: fromWire<Task>(task),
      claimEpoch,
      jobId: (reply['endedJob'] ?? null) as number | null,
    };
  }

  protected async next(input: NextInput): Promise<NextOutcome> {
    const session = input.session === undefined ? undefined : validateId('session', input.session);
    const { kind, ttl, project, label } = input;
    const body = { session, kind, ttl, project, label, host: String(input.host), pid: Number(input.pid) };
    const answer = await this.api.ask('POST', '/v1/next', body);
    if (
      !answer.ok &&
      answer.refusal.status === 404 &&
      answer.refusal.message.startsWith('no eligible task')
    ) {
      const gated = answer.refusal.details['gated'];
      return { ok: false, gated: Array.isArray(gated) ? fromWire<Task[]>(gated) : [] };
    }
    const got = this.api.body<{ key: string; session?: number }>(answer);
    const detail = await this.showTask(got.key);
    if (detail.claim === null) throw new InvalidInputError(`the claim on ${got.key} ended at once`);
    const started =
      got.session === undefined ? null : await this.api.want<Session>('GET', `/v1/sessions/${got.session}`);
    return { ok: true, task: detail.task, claim: detail.claim, session: started };
  }

  private fenceable(answer: Answer): FencedResult {
    const fenced = fencedOf(answer);
    if (fenced !== null) return fenced;
    this.api.body(answer);
    return { ok: true };
  }
}
