/**
 * One table from error code to HTTP status, as cli/exit-codes.ts is to exit codes, and the error
 * body every route answers with: {"error": {"code", "message", "hint", "details"}}, the same
 * code, message and hint the CLI prints. Expected outcomes keep their names: held, fenced and
 * lost are 409 with those codes. Adding an ErrorCode without a row here fails the compile.
 */
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { BatonError, TaskStateError, type ErrorCode } from '../core/errors.js';
import { Refusal } from '../coordinator/refusals.js';
import { toWire } from '../coordinator/wire.js';
import { AuthError } from './auth.js';

const HTTP_STATUS_BY_ERROR = {
  invalid_input: 400,
  workspace_unresolved: 422,
  conflict: 409,
  fenced: 409,
  task_open: 409,
  task_in_review: 409,
  task_done: 409,
  task_closed: 409,
  task_escalated: 409,
  not_found: 404,
  store_unavailable: 503,
  github_unavailable: 503,
  forbidden: 403,
} as const satisfies Record<ErrorCode, ContentfulStatusCode>;

/** Codes only the HTTP adapter gives: no token or a bad one (401), beyond the token's scope (403). */
const HTTP_ONLY_CODES = {
  unauthorized: 401,
  forbidden: 403,
  unsupported_media_type: 415,
  unexpected: 500,
} as const satisfies Record<string, ContentfulStatusCode>;

export interface ErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly hint: string | null;
    readonly details: Readonly<Record<string, unknown>>;
  };
}

export function errorBody(
  code: string,
  message: string,
  hint: string | null | undefined,
  details: Readonly<Record<string, unknown>> = {},
): ErrorBody {
  return {
    error: { code, message, hint: hint ?? null, details: toWire(details) as Record<string, unknown> },
  };
}

/**
 * The status and body for anything a handler threw. A BatonError is a refusal; a malformed body
 * or an unsupported content type (Hono's HTTPException) is bad input; anything else is a bug (500).
 */
export function errorResponse(error: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  if (error instanceof AuthError) {
    return {
      status: HTTP_ONLY_CODES[error.code],
      body: errorBody(error.code, error.message, error.hint, error.details),
    };
  }
  if (error instanceof Refusal) {
    return {
      status: HTTP_STATUS_BY_ERROR[error.code],
      body: errorBody(error.label, error.message, error.hint, error.details),
    };
  }
  if (error instanceof BatonError) {
    const details = error instanceof TaskStateError ? error.details : {};
    return {
      status: HTTP_STATUS_BY_ERROR[error.code],
      body: errorBody(error.code, error.message, error.hint, details),
    };
  }
  if (error instanceof HTTPException && error.status < 500) {
    const media = error.status === 415;
    return {
      status: error.status,
      body: errorBody(
        media ? 'unsupported_media_type' : 'invalid_input',
        media ? 'the body must be JSON' : `the request is malformed: ${error.message}`,
        media ? 'send Content-Type: application/json' : 'send a JSON object as the body',
      ),
    };
  }
  return {
    status: 500,
    body: errorBody('unexpected', error instanceof Error ? error.message : String(error), 'this is a bug'),
  };
}
