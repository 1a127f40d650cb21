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
  'forbidden',
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
      | 'task'
      | 'session'
      | 'job'
      | 'lease'
      | 'host'
      | 'workspace'
      | 'agent'
      | 'project'
      | 'label'
      | 'token'
      | 'ledger key'
      | 'database',
    readonly id: string,
    hint?: string,
  ) {
    super(`${entity} ${id} not found`, hint ?? LIST_COMMAND[entity]);
  }
}

/** Where to look for what exists, when the thrower gave no better hint. */
const LIST_COMMAND: Readonly<Record<NotFoundError['entity'], string | undefined>> = {
  task: 'list tasks with `baton task list`',
  session: 'list sessions with `baton session list`',
  job: 'list jobs with `baton queue list`',
  lease: undefined,
  host: 'list hosts with `baton hosts`',
  workspace: 'list workspaces with `baton workspace list`',
  agent: 'list agents with `baton agent list`',
  project: 'list projects with `baton project list`',
  label: "see each task's labels with `baton task list --json`",
  token: 'list tokens with `baton token list`',
  'ledger key': 'list the ledger keys with `baton ledger key`',
  database: undefined,
};

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

/** Error codes of a full disk: SQLite's, the file system's, PostgreSQL's disk_full (53100). */
const DISK_FULL_CODES: ReadonlySet<unknown> = new Set(['SQLITE_FULL', 'ENOSPC', '53100']);

/**
 * Whether a database call failed because the disk holding the database is full: the driver's
 * error, or one an engine named (diskFullError) with the driver's as its cause.
 */
export function isDiskFull(error: unknown): boolean {
  return DISK_FULL_CODES.has((error as { code?: unknown } | null)?.code) || causeIs(error, isDiskFull);
}

/** Whether a database call failed on a damaged file: SQLite's, or PostgreSQL's data_corrupted/index_corrupted. */
export function isCorrupt(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // SQLite's extended codes too: SQLITE_CORRUPT_INDEX, SQLITE_CORRUPT_SEQUENCE, …
  const sqlite = typeof code === 'string' && code.startsWith('SQLITE_CORRUPT');
  return CORRUPT_CODES.has(code) || sqlite || causeIs(error, isCorrupt);
}

const causeIs = (error: unknown, is: (cause: unknown) => boolean): boolean =>
  error instanceof Error && error.cause !== undefined && is(error.cause);

/**
 * A SQLite file found damaged by a read or a write after it opened well (issue 14, item 12),
 * naming the file; `cause` is the driver's error. Exit 2, as a damaged file met at the open.
 */
export function corruptDatabase(path: string, cause: Error): InvalidInputError {
  const error = new InvalidInputError(
    `the SQLite database ${path} is corrupt (${cause.message})`,
    'stop every baton on it and restore it from a backup (or move it aside: `baton init` makes a new one)',
  );
  error.cause = cause;
  return error;
}
const CORRUPT_CODES: ReadonlySet<unknown> = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB', 'XX001', 'XX002']);

/**
 * A database that cannot be written for want of disk space, named as such (issue 14, item 12)
 * when it is opened and when it is used: not "unreachable", since checking the path will not
 * help. Exit 5 all the same: it works again, unchanged, once space is freed.
 */
export function diskFullError(what: string, detail: string): StoreUnavailableError {
  return new StoreUnavailableError(
    `${what}: the disk is full (${detail})`,
    'free space on the device that holds the database, then run again; nothing was changed',
  );
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

/**
 * How a process opens the database (issue 14, items 9 and 10). Only `baton up` and `baton init`
 * create one (`create`); `baton db migrate` brings an existing one up to date (`migrate`); every
 * other command uses it as it is (`use`): it creates no file and changes no schema, so a
 * mistyped path or a newer CLI can never split the cluster or migrate under a running daemon.
 */
export type OpenIntent = 'create' | 'migrate' | 'use';

/** A SQLite path with no file, or a PostgreSQL database without Baton's tables. */
export function noDatabase(where: string, sqlite: boolean): NotFoundError {
  return new NotFoundError(
    'database',
    sqlite ? where : `${where} (it has no Baton tables)`,
    sqlite
      ? 'check --db / BATON_DB, or run it in the project (the directory holding .baton/ or one below it); ' +
          '`baton init` or `baton up` creates a new one'
      : '`baton init` or `baton up` creates the tables; check --db / BATON_DB if it should have them',
  );
}

/**
 * A SQLite file that is a database, but not Baton's (it has none of Baton's tables): someone
 * else's, which `baton init` must not be pointed at, as it would put Baton's tables into it.
 */
export class NotBatonDatabaseError extends NotFoundError {
  constructor(path: string) {
    super(
      'database',
      path,
      "check --db / BATON_DB: they name a file that is not Baton's (leave it as it is)",
    );
    this.message = `${path} is a SQLite database without Baton's tables: not a Baton database`;
  }
}

/** A schema older than this build needs, met by a command that does not migrate. */
function schemaTooOld(current: number, known: number): ConflictError {
  return new ConflictError(
    `the database's schema is at version ${current}, older than this baton needs (${known})`,
    'run `baton db migrate` (or restart `baton up`, which migrates) and try again',
  );
}

/** A schema version this process can use as it is, or the refusal to throw. */
export function schemaRefusal(current: number, known: number): ConflictError | null {
  if (current > known) return schemaTooNew(current, known);
  if (current < known) return schemaTooOld(current, known);
  return null;
}

/**
 * A file SQLite cannot read as a database (SQLITE_NOTADB or SQLITE_CORRUPT): not "unreachable",
 * since checking the path will not help when the path is right and the file is damaged.
 */
export function notADatabase(path: string, detail: string): InvalidInputError {
  return new InvalidInputError(
    `${path} is not a Baton database, or it is corrupt (${detail})`,
    'check --db / BATON_DB names the right file; if it does, stop every baton on it and restore it ' +
      'from a backup (or move it aside: `baton init` makes a new one)',
  );
}
