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
import { ApiConnection, fencedOf, fromWire, type Answer } from './api-connection.js';
import type { Holder } from '../core/claim.js';
import type { Session } from '../core/session.js';
import type { Task } from '../core/task.js';
import type { AgentClient, TaskView } from './client.js';

export class HttpAgentClient implements AgentClient {
  private readonly api: ApiConnection;

  constructor(
    readonly target: string,
    token: string,
  ) {
    this.api = new ApiConnection(target, token);
  }

  startSession: AgentClient['startSession'] = async (p) => this.api.want<Session>('POST', '/v1/sessions', p);

  endSession: AgentClient['endSession'] = async (session) =>
    (await this.api.want<{ ended: boolean }>('POST', `/v1/sessions/${session}/end`)).ended;

  getSession: AgentClient['getSession'] = (session) =>
    this.api.want<Session>('GET', `/v1/sessions/${session}`);

  heartbeat: AgentClient['heartbeat'] = async (p) => {
    if (p.claim === undefined) {
      await this.api.want('POST', `/v1/sessions/${p.session}/heartbeat`);
      return { ok: true };
    }
    const path = `/v1/claims/${encodeURIComponent(p.claim.key)}/heartbeat`;
    return this.fenceable(await this.api.ask('POST', path, { session: p.session, epoch: p.claim.epoch }));
  };

  claim: AgentClient['claim'] = async (p) => {
    const a = await this.api.ask('POST', `/v1/claims/${encodeURIComponent(p.key)}`, { session: p.session });
    if (!a.ok && a.refusal.label === 'held') {
      return { ok: false, reason: 'held', holder: fromWire<Holder>(a.refusal.details['holder']) };
    }
    if (!a.ok && a.refusal.label === 'fenced') throw new FencedError(a.refusal.message, a.refusal.hint);
    const { granted, ...claim } = this.api.body<{ granted: boolean } & Record<string, unknown>>(a);
    return { ok: true, granted, claim: fromWire(claim) };
  };

  release: AgentClient['release'] = async (p) => {
    const path = `/v1/claims/${encodeURIComponent(p.key)}/release`;
    const body = { session: p.session, epoch: p.epoch, outcome: p.outcome };
    return this.fenceable(await this.api.ask('POST', path, body));
  };

  recordEffect: AgentClient['recordEffect'] = async (p) => {
    const a = await this.api.ask('POST', '/v1/effects', p);
    const fenced = fencedOf(a);
    return fenced ?? { ok: true, effect: fromWire(this.api.body(a)) };
  };

  markToolCalls: AgentClient['markToolCalls'] = async (p) => {
    const body = { toolCalls: p.count, note: p.note };
    const r = await this.api.want<{ ok: boolean }>('POST', `/v1/sessions/${p.session}/progress`, body);
    return r.ok;
  };

  showTask: AgentClient['showTask'] = async (key) => {
    const d = await this.api.want<TaskView>('GET', `/v1/tasks/${encodeURIComponent(key)}`);
    return { task: d.task, holder: d.holder, jobs: d.jobs };
  };

  next: AgentClient['next'] = async (p) => {
    const a = await this.api.ask('POST', '/v1/next', p);
    if (!a.ok && a.refusal.status === 404 && a.refusal.message.startsWith('no eligible task')) {
      const gated = a.refusal.details['gated'];
      return { ok: false, gated: Array.isArray(gated) ? fromWire<Task[]>(gated) : [] };
    }
    const got = this.api.body<{ key: string; epoch: number }>(a);
    const { task } = await this.showTask(got.key);
    return { ok: true, task, epoch: got.epoch };
  };

  escalate: AgentClient['escalate'] = async (p) => {
    const path = `/v1/tasks/${encodeURIComponent(p.key)}/escalate`;
    const a = await this.api.ask('POST', path, { reason: p.reason, session: p.session, epoch: p.epoch });
    const fenced = fencedOf(a);
    if (fenced !== null) return fenced;
    const r = this.api.body<{ endedJob: number | null } & Record<string, unknown>>(a);
    const task = Object.fromEntries(
      Object.entries(r).filter(([k]) => k !== 'endedJob' && k !== 'endedClaimEpoch'),
    );
    return { ok: true, task: fromWire<Task>(task), jobId: r.endedJob };
  };

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** A heartbeat or release: `fenced` as a value, anything else refused is thrown. */
  private fenceable(a: Answer): { ok: true } | { ok: false; reason: 'fenced'; current: Holder | null } {
    const fenced = fencedOf(a);
    if (fenced !== null) return fenced;
    this.api.body(a);
    return { ok: true };
  }
}
