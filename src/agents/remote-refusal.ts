/**
 * A refusal Baton's HTTP API answered (api-connection.ts), in a module of its own so that the
 * CLI's error report can name it without loading the HTTP client (docs/decisions/0007).
 */
import { BatonError, ERROR_CODES, type ErrorCode } from '../core/errors.js';

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
  if (status === 422) return 'workspace_unresolved';
  if (status === 409) return 'conflict';
  // 401 and 403: no token, a bad one, or one beyond its scope: not allowed (exit 6), not bad input.
  if (status === 401 || status === 403) return 'forbidden';
  return 'invalid_input';
}
