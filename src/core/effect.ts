/**
 * An effect is a side effect a claim holder makes under its claim, reported to Baton so the
 * database can fence it: a write to a per-task resource that carries the claim's epoch. The
 * store accepts it only while (session, epoch) is the task's live claim, judged in the same
 * atomic step as the write, so a holder that was paused, cut off or replaced cannot land a
 * stale write after a newer epoch was granted. Effects are append-only.
 */
import type { Holder } from './claim.js';
import { InvalidInputError } from './errors.js';
import { isWebAddress } from './validate.js';
import type { SessionId } from './session.js';
import type { Instant } from './time.js';

export interface Effect {
  readonly id: number;
  readonly key: string;
  readonly session: SessionId;
  /** The claim epoch the effect was made under. */
  readonly epoch: number;
  readonly kind: string;
  /** Any JSON value the holder attached (what it wrote, where, a digest). */
  readonly payload: unknown;
  readonly recordedAt: Instant;
}

export type EffectResult =
  | { readonly ok: true; readonly effect: Effect }
  | {
      readonly ok: false;
      readonly reason: 'fenced';
      readonly current: Holder | null;
      /** Set when the session has ended (or was rescued): nothing it presents is current. */
      readonly sessionEnded?: true;
    };

const EFFECT_KIND_LENGTH_MAX = 100;
/** Characters of the payload's JSON text. */
const EFFECT_PAYLOAD_LENGTH_MAX = 16_384;

const KIND_PATTERN = /^[\x21-\x7e]+$/;
/** With the u flag, \p{Cs} matches only a surrogate that is not half of a pair. */
const LONE_SURROGATE = /\p{Cs}/u;

export function validateEffectKind(kind: unknown): string {
  if (typeof kind !== 'string' || kind.length === 0) {
    throw new InvalidInputError('effect kind is missing', 'give a kind such as file-write or pr-comment');
  }
  if (kind.length > EFFECT_KIND_LENGTH_MAX || !KIND_PATTERN.test(kind)) {
    throw new InvalidInputError(
      `effect kind ${JSON.stringify(kind.slice(0, 120))} is not 1-${EFFECT_KIND_LENGTH_MAX} printable ASCII ` +
        'characters without spaces',
      'use a short word such as file-write',
    );
  }
  return kind;
}

/**
 * A `pr` effect's `url` is the pull request's web page: `task show` prints it and a reader follows
 * it, so only an http(s) address is taken; a `javascript:`, `data:` or `file:` one is refused.
 */
export function validateEffectUrl(kind: string, payload: unknown): void {
  if (kind !== 'pr' || typeof payload !== 'object' || payload === null || !('url' in payload)) return;
  const url: unknown = payload.url;
  if (typeof url === 'string' && isWebAddress(url)) return;
  const shown = typeof url === 'string' ? JSON.stringify(url.slice(0, 120)) : `of type ${typeof url}`;
  throw new InvalidInputError(
    `the pr effect's url ${shown} is not an http(s) address`,
    'give the pull request\'s web page, such as {"url": "https://github.com/acme/api/pull/7"}',
  );
}

/**
 * The payload as the JSON text both engines store. Refuses what JSON cannot carry the same way
 * on both (undefined, functions, non-finite numbers become null or vanish; PostgreSQL's jsonb
 * refuses the NUL character and a lone surrogate), and anything longer than the limit.
 */
export function encodeEffectPayload(payload: unknown): string {
  if (payload === undefined) return '{}';
  let text: string | undefined;
  try {
    text = JSON.stringify(payload, (key, value: unknown) => {
      if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('a non-finite number');
      // JSON.stringify writes it as a \ud800 escape, which PostgreSQL's jsonb refuses.
      if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value)))
        throw new Error('a string holds half of a character (a lone UTF-16 surrogate)');
      if (typeof value === 'bigint' || typeof value === 'function' || typeof value === 'symbol') {
        throw new Error(`a ${typeof value}`);
      }
      return value;
    });
  } catch (error) {
    throw new InvalidInputError(
      `the effect payload is not JSON: ${(error as Error).message}`,
      'pass a JSON value',
    );
  }
  if (text === undefined) throw new InvalidInputError('the effect payload is not JSON', 'pass a JSON value');
  if (text.length > EFFECT_PAYLOAD_LENGTH_MAX) {
    throw new InvalidInputError(
      `the effect payload is ${text.length} characters of JSON; the limit is ${EFFECT_PAYLOAD_LENGTH_MAX}`,
      'record a reference (a path, a commit, a digest) instead of the content',
    );
  }
  // An escaped NUL (\u0000 after an even run of backslashes), not a literal backslash-u.
  if (/(^|[^\\])(\\\\)*\\u0000/.test(text)) {
    throw new InvalidInputError('the effect payload contains a NUL character', 'remove it');
  }
  return text;
}
