/**
 * Fenced side effects for the adapters: checks raw input, then asks the store to append the
 * effect under the presented claim. A `fenced` answer means the claim is no longer current and
 * the caller must stop; nothing was written.
 */
import type { Effect, EffectResult } from '../core/effect.js';
import { validateEffectKind } from '../core/effect.js';
import { InvalidInputError } from '../core/errors.js';
import { validateEpoch, validateId, validateInteger, validateKey } from '../core/validate.js';
import type { Store } from '../store/store.js';
import { LIST_LIMIT_MAX } from './inputs.js';

export interface EffectInput {
  readonly key: unknown;
  readonly session: unknown;
  readonly epoch: unknown;
  readonly kind: unknown;
  /** A JSON value (already parsed); absent means `{}`. */
  readonly payload?: unknown;
}

export interface EffectListInput {
  readonly key: unknown;
  readonly after?: unknown;
  readonly limit?: unknown;
}

/** JSON text from the command line, as a value. */
export function parseJsonText(what: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new InvalidInputError(
      `${what} is not valid JSON: ${(error as Error).message}`,
      `quote it for the shell, e.g. --payload '{"path":"src/a.ts"}'`,
    );
  }
}

export class Effects {
  constructor(private readonly store: Store) {}

  record(input: EffectInput): Promise<EffectResult> {
    return this.store.effects.record({
      key: validateKey(input.key),
      session: validateId('session', input.session),
      epoch: validateEpoch(input.epoch),
      kind: validateEffectKind(input.kind),
      payload: input.payload,
    });
  }

  list(input: EffectListInput): Promise<readonly Effect[]> {
    return this.store.effects.list({
      key: validateKey(input.key),
      afterId:
        input.after === undefined
          ? undefined
          : validateInteger('after id', input.after, 0, Number.MAX_SAFE_INTEGER),
      limit: input.limit === undefined ? undefined : validateInteger('limit', input.limit, 1, LIST_LIMIT_MAX),
    });
  }
}
