/**
 * Fenced side effects for the adapters: checks raw input, then asks the store to append the
 * effect under the presented claim. A `fenced` answer means the claim is no longer current and
 * the caller must stop; nothing was written.
 */
import type { Effect, EffectResult } from '../core/effect.js';
import { validateEffectKind, validateEffectUrl } from '../core/effect.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import { validateEpoch, validateId, validateKey } from '../core/validate.js';
import type { Store } from '../store/store.js';
import { parsePage } from './inputs.js';

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

  /** Records the effect; an accepted one is also a progress mark of its session. */
  async record(input: EffectInput): Promise<EffectResult> {
    const session = validateId('session', input.session);
    const kind = validateEffectKind(input.kind);
    validateEffectUrl(kind, input.payload);
    const result = await this.store.effects.record({
      key: validateKey(input.key),
      session,
      epoch: validateEpoch(input.epoch),
      kind,
      payload: input.payload,
    });
    // The effect is recorded whatever happens to the mark: a lost mark only delays a stall's
    // clearing, while failing here would invite the caller to record the effect twice.
    if (result.ok)
      await this.store.progress.mark({ session, effects: 1, note: `effect ${kind}` }).catch(() => null);
    return result;
  }

  /** The task's accepted effects, oldest first; NotFoundError for an unknown task (not an empty list). */
  async list(input: EffectListInput): Promise<readonly Effect[]> {
    const key = validateKey(input.key);
    const effects = await this.store.effects.list({ key, ...parsePage(input) });
    if (effects.length === 0 && (await this.store.tasks.get(key)) === null)
      throw new NotFoundError('task', key, 'add it with `baton task add`');
    return effects;
  }
}
