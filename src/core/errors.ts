/**
 * Refusals the caller must see. Expected outcomes (a lost race, a held claim) are returned values,
 * never thrown; broken invariants are assertions. Every refusal carries a literal `code` so the
 * adapters can map it to an exit code or HTTP status in one table each.
 */
export const ERROR_CODES = [
  'invalid_input',
  'not_found',
  'conflict',
  'fenced',
  'store_unavailable',
  'workspace_unresolved',
  'task_open',
  'task_in_review',
  'task_done',
  'task_closed',
  'task_escalated',
  'github_unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export abstract class BatonError extends Error {
  abstract readonly code: ErrorCode;
  /** One sentence telling the user what to do about it. */
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }
}

/** Input that can never succeed as given: a malformed key, a negative priority, an unknown flag. */
export class InvalidInputError extends BatonError {
  readonly code = 'invalid_input';
  override readonly name = 'InvalidInputError';
}

/** The named task, session, job or lease does not exist. */
export class NotFoundError extends BatonError {
  readonly code = 'not_found';
  override readonly name = 'NotFoundError';
  constructor(
    readonly entity:
      'task' | 'session' | 'job' | 'lease' | 'host' | 'workspace' | 'agent' | 'project' | 'token',
    readonly id: string,
    hint?: string,
  ) {
    super(`${entity} ${id} not found`, hint);
  }
}

/** The thing is held by someone else, or in a state that refuses the request. */
export class ConflictError extends BatonError {
  readonly code = 'conflict';
  override readonly name = 'ConflictError';
}

/** The epoch (or term) presented is no longer current: the caller was fenced off. */
export class FencedError extends BatonError {
  readonly code = 'fenced';
  override readonly name = 'FencedError';
}

/** The database could not be reached or refused the connection. */
export class StoreUnavailableError extends BatonError {
  readonly code = 'store_unavailable';
  override readonly name = 'StoreUnavailableError';
}

/** GitHub could not be reached, refused the token, or kept answering with errors past the retries. */
export class GithubUnavailableError extends BatonError {
  readonly code = 'github_unavailable';
  override readonly name = 'GithubUnavailableError';
}

/**
 * A run needs an exclusive workspace lock (its task requires the filesystem, or its agent has a
 * coding role) and no workspace is bound to the task, the agent or the project. The message is
 * the cause, the hint the fix; there is deliberately no fallback to some other workspace.
 */
export class WorkspaceConfigurationError extends BatonError {
  readonly code = 'workspace_unresolved';
  override readonly name = 'WorkspaceConfigurationError';
  constructor(
    readonly key: string,
    readonly agent: string | null,
    readonly project: string | null,
    cause: string,
    fix: string,
  ) {
    super(cause, fix);
  }
}

/**
 * The task's state refuses the request: a done or closed task is never claimed, enqueued or
 * placed again until it is reopened; an escalated one waits for a human; one in review waits for
 * its verdict. The code names the state (`task_done`, `task_closed`, …); the message says since
 * when and by whom, the hint how to move it on.
 */
export class TaskStateError extends BatonError {
  readonly code: `task_${TaskStateName}`;
  override readonly name = 'TaskStateError';
  constructor(
    readonly key: string,
    readonly state: TaskStateName,
    message: string,
    hint: string,
    /** Facts for a --json error object: the state, since when, by whom, why. */
    readonly details: Readonly<Record<string, unknown>>,
  ) {
    super(message, hint);
    this.code = `task_${state}`;
  }
}

/** The task states, spelled here so errors.ts imports nothing (task.ts is their home). */
type TaskStateName = 'open' | 'in_review' | 'done' | 'closed' | 'escalated';

/**
 * A database whose schema is newer than this build of Baton knows (issue 14, item 10): refused,
 * so an older process never writes to tables whose rules it does not know.
 */
export function schemaTooNew(current: number, known: number): ConflictError {
  return new ConflictError(
    `the database's schema is at version ${current}, newer than this baton knows (${known})`,
    'upgrade baton on this host (git pull && npm ci && npm run build), or use the newer one',
  );
}
