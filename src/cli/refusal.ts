/**
 * A refusal the CLI builds from a returned outcome (held, fenced, lost). The store reports these
 * as values; the CLI turns them into an exit code like any thrown BatonError, and keeps the
 * outcome's facts (who holds it now) for the --json error object.
 */
import { BatonError, type ErrorCode } from '../core/errors.js';

export class Refusal extends BatonError {
  override readonly name = 'Refusal';

  constructor(
    readonly code: ErrorCode,
    /** The `error` field of the JSON object; `held` is more telling than `conflict`. */
    readonly label: string,
    message: string,
    hint: string,
    /** Extra fields for the JSON object, such as the holder. */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message, hint);
  }
}
