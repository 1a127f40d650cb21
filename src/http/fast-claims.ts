/**
 * A shorter way through node:http for the two requests agents send most, claim and release
 * (issue 22): `POST /v1/claims/{key}` and `POST /v1/claims/{key}/release`, taken only when the
 * request is plainly well-formed: a bearer token, `Content-Type: application/json`, a
 * Content-Length of at most 1 kB, a Host and a path @hono/node-server takes as they are, and a
 * body that is exactly what the route's schema takes. The request is then answered by the same
 * calls as the Hono route (claims.ts), its errors by the same table (errors.ts), byte for byte the
 * same answer. Anything else, including every body the schema would refuse, goes on to Hono with
 * the body already read (the adapter's `rawBody`), which answers it as before.
 *
 * Why: a warm claim + release over Hono cost `baton serve` about 1.6 ms of CPU on the 2-core
 * machine, a quarter of its JavaScript time in Hono, its node adapter and zod (the Request and
 * Headers objects, the router, the validator, the Response); see bench/http-vs-direct.ts for
 * what this saves, measured.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RELEASE_OUTCOMES, type ReleaseOutcome } from '../core/claim.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { toWire } from '../coordinator/wire.js';
import { bearerSecret, carried, verified, type Asker } from './auth.js';
import { claimAs, releaseAs, type ReleaseAsked } from './claims.js';
import { errorResponse } from './errors.js';

export type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** The most a body may be to be read here; a claim's is about 15 bytes, a release's about 50. */
const FAST_BODY_MAX = 1024;
/**
 * A path whose key is in the characters encodeURIComponent leaves, or percent-escapes: one
 * @hono/node-server passes on unchanged (no `..`, no characters the URL parser would escape).
 */
const HOT_PATH = /^\/v1\/claims\/((?:[A-Za-z0-9\-_.!~*'()]|%[0-9A-Fa-f]{2})+)(\/release)?$/;
/** A dot segment, which the URL parser would resolve away: never a key here. */
const DOT_SEGMENT = /^(?:\.|%2[eE]){1,2}$/;
/** @hono/node-server's own test for a Host it uses as it is (reValidHost in its url.ts). */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;

interface ClaimAsked {
  readonly key: string;
  readonly session: number;
}

interface Hot {
  readonly key: string;
  /** The path as Hono's `context.req.path` gives it, for a refusal's ledger row. */
  readonly path: string;
  readonly release: boolean;
  readonly secret: string;
}

/** The claim or release a request asks for, or null when it is not plainly one. */
function hotRequest(req: IncomingMessage): Hot | null {
  const { headers, url } = req;
  if (req.method !== 'POST' || url === undefined) return null;
  const match = HOT_PATH.exec(url);
  const segment = match?.[1];
  if (match === null || segment === undefined || DOT_SEGMENT.test(segment)) return null;
  const length = headers['content-length'];
  if (
    headers['content-type'] !== 'application/json' ||
    headers['transfer-encoding'] !== undefined ||
    length === undefined ||
    !/^\d{1,4}$/.test(length) ||
    Number(length) > FAST_BODY_MAX ||
    !PLAIN_HOST.test(headers.host ?? '')
  )
    return null;
  const secret = bearerSecret(headers.authorization ?? '');
  if (secret === undefined) return null;
  try {
    // As Hono decodes them: the path with decodeURI, keeping %25 (getPath), then the key whole.
    const path = url.includes('%') ? decodeURI(url.replace(/%25/g, '%2525')) : url;
    const key = decodeURIComponent(segment);
    return { key, path, release: match[2] !== undefined, secret };
  } catch {
    return null;
  }
}

const isId = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

/**
 * The body as the route's strict schema would give it (routes-core.ts: ClaimBody, ReleaseBody),
 * or null for anything it might not take as it is: that goes to Hono, which says why.
 */
export function hotBody(text: string, key: string, release: boolean): ClaimAsked | ReleaseAsked | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const fields = body as Record<string, unknown>;
  const names = Object.keys(fields);
  const { session, epoch, outcome } = fields;
  if (!isId(session)) return null;
  if (!release) return names.length === 1 ? { key, session } : null;
  if (!isId(epoch)) return null;
  if (outcome === undefined) return names.length === 2 ? { key, session, epoch } : null;
  if (names.length !== 3 || !RELEASE_OUTCOMES.includes(outcome as ReleaseOutcome)) return null;
  return { key, session, epoch, outcome: outcome as ReleaseOutcome };
}

/** Answers as Hono's `context.json` through @hono/node-server does: the same headers, in order. */
function send(res: ServerResponse, status: number, value: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(value));
}

/** Told of each request answered here, by route: `/metrics` counts them (metrics.ts, shortWayCounter). */
type ShortWayCount = (route: 'claim' | 'release') => void;

async function answer(
  baton: Coordinator,
  hot: Hot,
  asked: ClaimAsked | ReleaseAsked,
  res: ServerResponse,
  count: ShortWayCount,
) {
  count(hot.release ? 'release' : 'claim');
  try {
    const token = carried(await verified(baton, hot.secret, `POST ${hot.path}`), false);
    const asker: Asker = { token, route: () => `POST ${hot.path}` };
    const done =
      'epoch' in asked
        ? await releaseAs(baton, asker, asked)
        : await claimAs(baton, asker, asked.key, asked.session);
    send(res, 200, toWire(done));
  } catch (error) {
    const { status, body } = errorResponse(error);
    send(res, status, body);
  }
}

/** The request listener: claim and release the short way when plainly well-formed, else `next`. */
export function fastClaims(baton: Coordinator, next: Listener, count: ShortWayCount): Listener {
  return (req, res) => {
    const hot = hotRequest(req);
    if (hot === null) return next(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks);
      const asked = hotBody(raw.toString('utf8'), hot.key, hot.release);
      if (asked !== null) return void answer(baton, hot, asked, res, count);
      // The adapter reads a body already read from here (as on Cloud Functions).
      (req as IncomingMessage & { rawBody?: Buffer }).rawBody = raw;
      next(req, res);
    });
  };
}
