/**
 * One connection to Baton's HTTP API: a URL and a bearer token, and requests whose answers come
 * back in domain form (Instants as epoch ms again). A refusal is a RemoteRefusal carrying the
 * server's code, message, hint and details; the CLI's remote mode (cli/remote.ts) and the agents'
 * client (http-client.ts) both speak through it.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { FencedResult, Holder, ReleaseResult } from '../core/claim.js';
import { OPAQUE_FIELDS } from '../coordinator/wire.js';
import { RemoteRefusal } from './remote-refusal.js';

/** How long one request may take before it counts as the server being away. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * How long a connection is kept idle for the next request: below the server's keepAliveTimeout
 * (65 s for `baton serve`, 5 s for a Node server left at its default), so that this side closes
 * an idle connection first and never sends a request on one the server is closing. A server that
 * announces less (`Keep-Alive: timeout=N`) is left a second before it (Node's agent does that).
 * Free connections do not keep a CLI process alive.
 */
const IDLE_TIMEOUT_MS = 4_000;
const agents = {
  http: new HttpAgent({ keepAlive: true, timeout: IDLE_TIMEOUT_MS }),
  https: new HttpsAgent({ keepAlive: true, timeout: IDLE_TIMEOUT_MS }),
};

// Instant-valued fields of the domain types, as the adapters name them (coordinator/wire.ts).
const INSTANT_KEY = /^(at|since)$|At$/;

/** The inverse of the adapters' toWire: ISO strings of Instant fields back to epoch ms. */
export function fromWire<T>(value: unknown): T {
  if (Array.isArray(value)) return value.map((item) => fromWire(item)) as T;
  if (value === null || typeof value !== 'object') return value as T;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (OPAQUE_FIELDS.has(key)) {
      out[key] = field;
      continue;
    }
    const instant = INSTANT_KEY.test(key) && typeof field === 'string' ? Date.parse(field) : NaN;
    out[key] = Number.isNaN(instant) ? fromWire(field) : instant;
  }
  return out as T;
}

export type Answer =
  { readonly ok: true; readonly body: unknown } | { readonly ok: false; readonly refusal: RemoteRefusal };

/** A refusal that is the `fenced` outcome of a guarded write, as a value; null for anything else. */
export function fencedOf(answer: Answer): Exclude<FencedResult, { ok: true }> | null {
  if (answer.ok || answer.refusal.label !== 'fenced' || !('current' in answer.refusal.details)) return null;
  const current = fromWire<Holder | null>(answer.refusal.details['current']);
  const ended = answer.refusal.details['sessionEnded'] === true ? ({ sessionEnded: true } as const) : {};
  return { ok: false, reason: 'fenced', current, ...ended };
}

/** A release's answer as a value: fenced, kept for the runner (`released: false`) or done; any other refusal thrown. */
export function releasedOf(api: ApiConnection, answer: Answer): ReleaseResult {
  const fenced = fencedOf(answer);
  if (fenced !== null) return fenced;
  return api.body<{ released?: unknown }>(answer).released === false
    ? { ok: true, released: false }
    : { ok: true };
}

export class ApiConnection {
  constructor(
    readonly target: string,
    private readonly token: string,
  ) {}

  body<T>(answer: Answer): T {
    if (!answer.ok) throw answer.refusal;
    return answer.body as T;
  }

  async want<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    return fromWire<T>(this.body(await this.ask(method, path, body)));
  }

  /** One request; a refusal comes back as a value, a server that cannot be reached throws. */
  async ask(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
    const url = new URL(path, this.target.endsWith('/') ? this.target : `${this.target}/`);
    let response: Exchanged;
    try {
      response = await exchange(
        url,
        method,
        this.token,
        method === 'POST' ? JSON.stringify(body ?? {}) : null,
      );
    } catch (error) {
      throw new RemoteRefusal(
        'store_unavailable',
        `Baton's API at ${this.target} cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
        'check that `baton up` or `baton serve` runs there, and BATON_URL',
        {},
        503,
      );
    }
    const { text } = response;
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (response.status >= 200 && response.status < 300) return { ok: true, body: parsed };
    const error = (parsed as { error?: Record<string, unknown> } | null)?.error ?? {};
    const str = (field: unknown): string | undefined => (typeof field === 'string' ? field : undefined);
    const details = (error['details'] ?? {}) as Record<string, unknown>;
    const message = str(error['message']) ?? `${method} ${path} answered ${response.status}`;
    const label = str(error['code']) ?? `http_${response.status}`;
    return {
      ok: false,
      refusal: new RemoteRefusal(label, message, str(error['hint']), details, response.status),
    };
  }
}

interface Exchanged {
  readonly status: number;
  readonly text: string;
}

/**
 * One request and its whole answer, over node:http(s). Not fetch: its first use loads undici and
 * compiles undici's WebAssembly parser, about 0.3 s of CPU, which every short-lived `baton` call
 * over HTTP paid (ten processes making one request each: 5.5 s of CPU with fetch, 2.0 s with
 * node:http, 1.5 s for ten that do nothing). Rejects when the server cannot be reached or does
 * not answer in full within REQUEST_TIMEOUT_MS.
 *
 * A GET that fails on a kept-alive connection the server closed meanwhile (another server, or a
 * proxy, with a shorter idle timeout than it announced) is sent once more on a new connection:
 * it changes nothing, so sending it twice is safe. A POST is not: the server may have carried it
 * out before the connection broke, and the caller is told the server could not be reached.
 */
function exchange(
  url: URL,
  method: 'GET' | 'POST',
  token: string,
  body: string | null,
  retried = false,
): Promise<Exchanged> {
  const headers: Record<string, string | number> = { authorization: `Bearer ${token}` };
  if (body !== null) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve, reject) => {
    const https = url.protocol === 'https:';
    const send = https ? httpsRequest : httpRequest;
    const agent = https ? agents.https : agents.http;
    const request = send(url, { method, headers, agent }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      answer.on('end', () => {
        clearTimeout(timer);
        resolve({ status: answer.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    const timer = setTimeout(
      () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      REQUEST_TIMEOUT_MS,
    );
    function fail(error: Error): void {
      clearTimeout(timer);
      if (method === 'GET' && !retried && closedUnder(request, error))
        exchange(url, method, token, body, true).then(resolve, reject);
      else reject(error);
    }
    request.on('error', fail);
    request.end(body ?? undefined);
  });
}

/** The request went out on a reused connection that the server had closed (reset, broken pipe). */
function closedUnder(request: ClientRequest, error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return request.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE');
}
