/**
 * The AgentClient over Baton's HTTP API (BATON_URL with a BATON_TOKEN; issue 17, item 4): what an
 * agent the runner started uses, holding no database credentials. Every method is one request
 * to the API's routes; answers come back in their wire form (Instants as ISO strings) and are
 * turned back into domain values here, so the MCP tools and hooks cannot tell the clients apart.
 *
 * Expected outcomes keep their meaning: a 409 `held` or `fenced` is returned as a value, as the
 * store returns it; every other refusal is thrown as a RemoteRefusal carrying the server's code,
 * message and hint (`unauthorized` and `forbidden` when the token does not open the route).
 */
import { BatonError, ERROR_CODES, FencedError, type ErrorCode } from '../core/errors.js';
import type { Holder } from '../core/claim.js';
import type { Session } from '../core/session.js';
import type { Task } from '../core/task.js';
import type { AgentClient, TaskView } from './client.js';

/** How long one request may take before it counts as the server being away. */
const REQUEST_TIMEOUT_MS = 30_000;

/** A refusal the API answered, with its code (`held`, `forbidden`, …) and HTTP status. */
export class RemoteRefusal extends BatonError {
  override readonly name = 'RemoteRefusal';
  readonly code: ErrorCode;
  constructor(
    /** The server's code, such as `held`, `fenced`, `forbidden` or `task_done`. */
    readonly label: string,
    message: string,
    hint: string | undefined,
    readonly details: Readonly<Record<string, unknown>>,
    readonly status: number,
  ) {
    super(message, hint);
    this.code = codeOf(label, status);
  }
}

/** The ErrorCode (hence the exit code) of a server's refusal. */
function codeOf(label: string, status: number): ErrorCode {
  if ((ERROR_CODES as readonly string[]).includes(label)) return label as ErrorCode;
  if (label === 'held' || label === 'lost') return 'conflict';
  if (label === 'no_claim' || status === 404) return 'not_found';
  if (status === 503) return 'store_unavailable';
  if (status === 409) return 'conflict';
  // 401 and 403: the token given does not open this route; fix the token, as with bad input.
  return 'invalid_input';
}

// Instant-valued fields of the domain types, as the adapters name them (coordinator/wire.ts).
const INSTANT_KEY = /^(at|since)$|At$/;

/** The inverse of the adapters' toWire: ISO strings of Instant fields back to epoch ms. */
export function fromWire<T>(value: unknown): T {
  if (Array.isArray(value)) return value.map((v) => fromWire(v)) as T;
  if (value === null || typeof value !== 'object') return value as T;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const instant = INSTANT_KEY.test(key) && typeof field === 'string' ? Date.parse(field) : NaN;
    out[key] = Number.isNaN(instant) ? fromWire(field) : instant;
  }
  return out as T;
}

type Answer =
  { readonly ok: true; readonly body: unknown } | { readonly ok: false; readonly refusal: RemoteRefusal };

export class HttpAgentClient implements AgentClient {
  constructor(
    readonly target: string,
    private readonly token: string,
  ) {}

  startSession: AgentClient['startSession'] = async (p) => this.want<Session>('POST', '/v1/sessions', p);

  endSession: AgentClient['endSession'] = async (session) =>
    (await this.want<{ ended: boolean }>('POST', `/v1/sessions/${session}/end`)).ended;

  getSession: AgentClient['getSession'] = (session) => this.want<Session>('GET', `/v1/sessions/${session}`);

  heartbeat: AgentClient['heartbeat'] = async (p) => {
    if (p.claim === undefined) {
      await this.want('POST', `/v1/sessions/${p.session}/heartbeat`);
      return { ok: true };
    }
    const path = `/v1/claims/${encodeURIComponent(p.claim.key)}/heartbeat`;
    return this.fenceable(await this.ask('POST', path, { session: p.session, epoch: p.claim.epoch }));
  };

  claim: AgentClient['claim'] = async (p) => {
    const a = await this.ask('POST', `/v1/claims/${encodeURIComponent(p.key)}`, { session: p.session });
    if (!a.ok && a.refusal.label === 'held') {
      return { ok: false, reason: 'held', holder: fromWire<Holder>(a.refusal.details['holder']) };
    }
    if (!a.ok && a.refusal.label === 'fenced') throw new FencedError(a.refusal.message, a.refusal.hint);
    const { granted, ...claim } = this.body<{ granted: boolean } & Record<string, unknown>>(a);
    return { ok: true, granted, claim: fromWire(claim) };
  };

  release: AgentClient['release'] = async (p) => {
    const path = `/v1/claims/${encodeURIComponent(p.key)}/release`;
    const body = { session: p.session, epoch: p.epoch, outcome: p.outcome };
    return this.fenceable(await this.ask('POST', path, body));
  };

  recordEffect: AgentClient['recordEffect'] = async (p) => {
    const a = await this.ask('POST', '/v1/effects', p);
    const fenced = this.fencedOf(a);
    return fenced ?? { ok: true, effect: fromWire(this.body(a)) };
  };

  markToolCalls: AgentClient['markToolCalls'] = async (p) => {
    const body = { toolCalls: p.count, note: p.note };
    const r = await this.want<{ ok: boolean }>('POST', `/v1/sessions/${p.session}/progress`, body);
    return r.ok;
  };

  showTask: AgentClient['showTask'] = async (key) => {
    const d = await this.want<TaskView>('GET', `/v1/tasks/${encodeURIComponent(key)}`);
    return { task: d.task, holder: d.holder, jobs: d.jobs };
  };

  next: AgentClient['next'] = async (p) => {
    const a = await this.ask('POST', '/v1/next', p);
    if (!a.ok && a.refusal.status === 404 && a.refusal.message.startsWith('no eligible task')) {
      const gated = a.refusal.details['gated'];
      return { ok: false, gated: Array.isArray(gated) ? fromWire<Task[]>(gated) : [] };
    }
    const got = this.body<{ key: string; epoch: number }>(a);
    const { task } = await this.showTask(got.key);
    return { ok: true, task, epoch: got.epoch };
  };

  escalate: AgentClient['escalate'] = async (p) => {
    const path = `/v1/tasks/${encodeURIComponent(p.key)}/escalate`;
    const a = await this.ask('POST', path, { reason: p.reason, session: p.session, epoch: p.epoch });
    const fenced = this.fencedOf(a);
    if (fenced !== null) return fenced;
    const r = this.body<{ endedJob: number | null } & Record<string, unknown>>(a);
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
    const fenced = this.fencedOf(a);
    if (fenced !== null) return fenced;
    this.body(a);
    return { ok: true };
  }

  private fencedOf(a: Answer): { ok: false; reason: 'fenced'; current: Holder | null } | null {
    if (a.ok || a.refusal.label !== 'fenced' || !('current' in a.refusal.details)) return null;
    return { ok: false, reason: 'fenced', current: fromWire<Holder | null>(a.refusal.details['current']) };
  }

  private body<T>(a: Answer): T {
    if (!a.ok) throw a.refusal;
    return a.body as T;
  }

  private async want<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    return fromWire<T>(this.body(await this.ask(method, path, body)));
  }

  /** One request; a refusal comes back as a value, a server that cannot be reached throws. */
  private async ask(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
    const url = new URL(path, this.target.endsWith('/') ? this.target : `${this.target}/`);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
        },
        body: method === 'POST' ? JSON.stringify(body ?? {}) : null,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new RemoteRefusal(
        'store_unavailable',
        `Baton's API at ${this.target} cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
        'check that `baton up` or `baton serve` runs there, and BATON_URL',
        {},
        503,
      );
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (response.ok) return { ok: true, body: parsed };
    const e = (parsed as { error?: Record<string, unknown> } | null)?.error ?? {};
    const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
    const details = (e['details'] ?? {}) as Record<string, unknown>;
    const message = str(e['message']) ?? `${method} ${path} answered ${response.status}`;
    const label = str(e['code']) ?? `http_${response.status}`;
    return {
      ok: false,
      refusal: new RemoteRefusal(label, message, str(e['hint']), details, response.status),
    };
  }
}
