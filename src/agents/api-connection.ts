/**
 * One connection to Baton's HTTP API: a URL and a bearer token, and requests whose answers come
 * back in domain form (Instants as epoch ms again). A refusal is a RemoteRefusal carrying the
 * server's code, message, hint and details; the CLI's remote mode (cli/remote.ts) and the agents'
 * client (http-client.ts) both speak through it.
 */
import type { Holder } from '../core/claim.js';
import { BatonError, ERROR_CODES, type ErrorCode } from '../core/errors.js';

/** How long one request may take before it counts as the server being away. */
const REQUEST_TIMEOUT_MS = 30_000;

/** A refusal the API answered, with its code (`held`, `forbidden`, …) and HTTP status. */
class RemoteRefusal extends BatonError {
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

export type Answer =
  { readonly ok: true; readonly body: unknown } | { readonly ok: false; readonly refusal: RemoteRefusal };

/** A refusal that is the `fenced` outcome of a guarded write, as a value; null for anything else. */
export function fencedOf(a: Answer): { ok: false; reason: 'fenced'; current: Holder | null } | null {
  if (a.ok || a.refusal.label !== 'fenced' || !('current' in a.refusal.details)) return null;
  return { ok: false, reason: 'fenced', current: fromWire<Holder | null>(a.refusal.details['current']) };
}

export class ApiConnection {
  constructor(
    readonly target: string,
    private readonly token: string,
  ) {}

  body<T>(a: Answer): T {
    if (!a.ok) throw a.refusal;
    return a.body as T;
  }

  async want<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    return fromWire<T>(this.body(await this.ask(method, path, body)));
  }

  /** One request; a refusal comes back as a value, a server that cannot be reached throws. */
  async ask(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
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
