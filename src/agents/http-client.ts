/**
 * The AgentClient over Baton's HTTP API (BATON_URL with a BATON_TOKEN; issue 17, item 4): what an
 * agent the runner started uses, holding no database credentials. Every method is one request
 * to the API's routes; answers come back in their wire form (Instants as ISO strings) and are
 * turned back into domain values here, so the MCP tools and hooks cannot tell the clients apart.
 *
 * Expected outcomes keep their meaning: a 409 `held` or `fenced` is returned as a value, as the
 * store returns it; every other refusal is thrown as a RemoteRefusal (api-connection.ts) carrying
 * the server's code, message and hint (`unauthorized` and `forbidden` when the token does not
 * open the route).
 */
import { FencedError } from '../core/errors.js';
import { validateKey } from '../core/validate.js';
import { ApiConnection, fencedOf, fromWire, releasedOf, type Answer } from './api-connection.js';
import type { FencedResult, Holder } from '../core/claim.js';
import type { Session } from '../core/session.js';
import type { Task } from '../core/task.js';
import type { AgentClient, SessionClaims, TaskView } from './client.js';

/**
 * A task key as a path segment, checked first as the database mode checks it: a key that is not
 * text (a lone surrogate) gets validateKey's line, not encodeURIComponent's bare "URI malformed".
 */
const enc = (key: string): string => encodeURIComponent(validateKey(key));

export class HttpAgentClient implements AgentClient {
  private readonly api: ApiConnection;

  constructor(
    readonly target: string,
    token: string,
  ) {
    this.api = new ApiConnection(target, token);
  }

  // Each body names the route's fields (bodies are strict): a caller's extra property is not sent.
  startSession: AgentClient['startSession'] = async ({ kind, name, host, pid }) =>
    this.api.want<Session>('POST', '/v1/sessions', { kind, name, host, pid });

  endSession: AgentClient['endSession'] = async (session) =>
    (await this.api.want<{ ended: boolean }>('POST', `/v1/sessions/${session}/end`)).ended;

  getSession: AgentClient['getSession'] = (session) =>
    this.api.want<Session>('GET', `/v1/sessions/${session}`);

  sessionClaims: AgentClient['sessionClaims'] = async (session) => {
    const answer = await this.api.ask('GET', `/v1/sessions/${session}/claims`);
    // A server older than the route answers `no route`: the caller falls back to what it knows.
    if (!answer.ok && answer.refusal.status === 404 && answer.refusal.message.startsWith('no route '))
      return null;
    const { claims, tokenSession } = fromWire<SessionClaims>(this.api.body(answer));
    return {
      claims: claims.map(({ key, epoch, host, claimedAt, heartbeatAt }) => ({
        key,
        epoch,
        host,
        claimedAt,
        heartbeatAt,
      })),
      tokenSession,
    };
  };

  heartbeat: AgentClient['heartbeat'] = async (params) => {
    if (params.claim === undefined) {
      await this.api.want('POST', `/v1/sessions/${params.session}/heartbeat`);
      return { ok: true };
    }
    const path = `/v1/claims/${enc(params.claim.key)}/heartbeat`;
    return this.fenceable(
      await this.api.ask('POST', path, { session: params.session, epoch: params.claim.epoch }),
    );
  };

  claim: AgentClient['claim'] = async (params) => {
    const answer = await this.api.ask('POST', `/v1/claims/${enc(params.key)}`, {
      session: params.session,
    });
    if (!answer.ok && answer.refusal.label === 'held') {
      return { ok: false, reason: 'held', holder: fromWire<Holder>(answer.refusal.details['holder']) };
    }
    if (!answer.ok && answer.refusal.label === 'fenced')
      throw new FencedError(answer.refusal.message, answer.refusal.hint);
    const { granted, ...claim } = this.api.body<{ granted: boolean } & Record<string, unknown>>(answer);
    return { ok: true, granted, claim: fromWire(claim) };
  };

  release: AgentClient['release'] = async (params) => {
    const path = `/v1/claims/${enc(params.key)}/release`;
    const body = { session: params.session, epoch: params.epoch, outcome: params.outcome };
    return releasedOf(this.api, await this.api.ask('POST', path, body));
  };

  recordEffect: AgentClient['recordEffect'] = async (params) => {
    const { key, session, epoch, kind, payload } = params;
    const answer = await this.api.ask('POST', '/v1/effects', { key, session, epoch, kind, payload });
    const fenced = fencedOf(answer);
    return fenced ?? { ok: true, effect: fromWire(this.api.body(answer)) };
  };

  markToolCalls: AgentClient['markToolCalls'] = async (params) => {
    const body = { toolCalls: params.count, note: params.note };
    const row = await this.api.want<{ ok: boolean }>('POST', `/v1/sessions/${params.session}/progress`, body);
    return row.ok;
  };

  showTask: AgentClient['showTask'] = async (key) => {
    const view = await this.api.want<TaskView>('GET', `/v1/tasks/${enc(key)}`);
    return { task: view.task, holder: view.holder, jobs: view.jobs };
  };

  next: AgentClient['next'] = async (params) => {
    const { session, label, project } = params;
    const answer = await this.api.ask('POST', '/v1/next', { session, label, project });
    if (
      !answer.ok &&
      answer.refusal.status === 404 &&
      answer.refusal.message.startsWith('no eligible task')
    ) {
      const gated = answer.refusal.details['gated'];
      return { ok: false, gated: Array.isArray(gated) ? fromWire<Task[]>(gated) : [] };
    }
    const got = this.api.body<{ key: string; epoch: number }>(answer);
    const { task } = await this.showTask(got.key);
    return { ok: true, task, epoch: got.epoch };
  };

  escalate: AgentClient['escalate'] = async (params) => {
    const path = `/v1/tasks/${enc(params.key)}/escalate`;
    const answer = await this.api.ask('POST', path, {
      reason: params.reason,
      session: params.session,
      epoch: params.epoch,
    });
    const fenced = fencedOf(answer);
    if (fenced !== null) return fenced;
    const row = this.api.body<{ endedJob: number | null } & Record<string, unknown>>(answer);
    const task = Object.fromEntries(
      Object.entries(row).filter(([field]) => field !== 'endedJob' && field !== 'endedClaimEpoch'),
    );
    return { ok: true, task: fromWire<Task>(task), jobId: row.endedJob };
  };

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** A heartbeat or release: `fenced` as a value, anything else refused is thrown. */
  private fenceable(answer: Answer): FencedResult {
    const fenced = fencedOf(answer);
    if (fenced !== null) return fenced;
    this.api.body(answer);
    return { ok: true };
  }
}
