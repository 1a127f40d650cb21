/**
 * Raw input as the adapters receive it (command-line strings, parsed JSON bodies) and the checks
 * that turn it into Store params. Every field is `unknown` until checked here; each check throws
 * an InvalidInputError whose message names the field. Nothing here touches the database, so bad
 * input is refused before any write.
 */
import { AUDIT_TYPES } from '../core/audit-event.js';
import { RELEASE_OUTCOMES } from '../core/claim.js';
import { validateCommandTemplate } from '../core/command-template.js';
import { InvalidInputError } from '../core/errors.js';
import { JOB_STATES, TIME_LIMIT_MAX_MS, TIME_LIMIT_MIN_MS, type JobState } from '../core/job.js';
import {
  SESSION_KINDS,
  type SessionId,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
  sessionTtlMs,
} from '../core/session.js';
import { BODY_LENGTH_MAX, REASON_LENGTH_MAX, TASK_STATES, URL_LENGTH_MAX, type Actor } from '../core/task.js';
import {
  isWebAddress,
  refuseHalfCharacter,
  RAM_MB_MAX,
  validateEpoch,
  validateId,
  validateInteger,
  validateKey,
  validateLabels,
  validateName,
  validateDuration,
  validateOneOf,
  validatePriority,
  validateReason,
  validateTitle,
  validateTokenId,
} from '../core/validate.js';
import type {
  AuditListParams,
  ClaimAcquireParams,
  ClaimForceReleaseParams,
  ClaimReleaseParams,
  HeartbeatParams,
  JobEnqueueParams,
  JobListParams,
  SessionStartParams,
  TaskAddParams,
  TaskListParams,
} from '../store/store.js';
import { quoted } from '../core/text.js';

/** Rows one list call returns at most; matches the engines' own default cap. */
export const LIST_LIMIT_MAX = 1000;
/** Attempts one job may make before it fails for good. */
const ATTEMPT_MAX_LIMIT = 100;
/** Length of a job's command template; the schema's bound. */
const COMMAND_LENGTH_MAX = 4000;
/** Operating-system process ids fit a signed 32-bit integer. */
const PID_MAX = 2_147_483_647;

export interface TaskAddInput {
  readonly key: unknown;
  readonly title?: unknown;
  readonly priority?: unknown;
  readonly project?: unknown;
  readonly assignee?: unknown;
  readonly labels?: unknown;
  readonly body?: unknown;
  readonly url?: unknown;
  /** `required` or `none` (default): whether a successful run waits in review. */
  readonly review?: unknown;
  /** Keys of the tasks it waits for, added with it in one step (docs/decisions/0035-task-dependencies.md). */
  readonly after?: unknown;
  /** Who asked, named by the adapter (issue 14, item 11): the ledger row's `by`. */
  readonly by?: Actor | undefined;
}

export interface TaskListInput {
  readonly project?: unknown;
  readonly assignee?: unknown;
  readonly state?: unknown;
  readonly label?: unknown;
  /** true (or "true", from a query string): only tasks behind a gate; false: only those without. */
  readonly gated?: unknown;
  /** true (or "true"): only tasks that wait for a task not done; false: only those that wait for none. */
  readonly blocked?: unknown;
  /** The key of the page before's last task: the tasks after it, by priority then key (the next page). */
  readonly after?: unknown;
  readonly limit?: unknown;
}

export interface SessionStartInput {
  readonly kind?: unknown;
  readonly host: unknown;
  readonly pid: unknown;
  readonly name?: unknown;
  /** A duration (`8h`, `90m`, `30s`); a human's default is HUMAN_TTL_DEFAULT_MS. */
  readonly ttl?: unknown;
}

export interface HeartbeatInput {
  readonly session: unknown;
  readonly key?: unknown;
  readonly epoch?: unknown;
}

export interface ClaimInput {
  readonly key: unknown;
  readonly session: unknown;
}

export interface ReleaseInput extends ClaimInput {
  readonly epoch: unknown;
  readonly outcome?: unknown;
}

export interface ForceReleaseInput {
  readonly key: unknown;
  readonly reason: unknown;
  /** Who does it, named by the adapter (the CLI: user@host; HTTP: its token). */
  readonly by: Actor;
}

export interface EnqueueInput {
  readonly key: unknown;
  readonly priority?: unknown;
  readonly ramMb?: unknown;
  readonly command?: unknown;
  readonly attempts?: unknown;
  /** The job's run time limit: a duration (`2h`, `90m`, `30s`) or a number of seconds. */
  readonly timeLimit?: unknown;
  /** Who asked, named by the adapter: the ledger row's `by`, and its session. */
  readonly by?: Actor | undefined;
}

export interface JobListInput {
  /** One status, a comma-separated list of them, or an array. */
  readonly status?: unknown;
  readonly key?: unknown;
  readonly limit?: unknown;
  /** A job id: only the finished jobs older than it (the next page of `queue list`). */
  readonly before?: unknown;
}

export interface AuditInput {
  readonly key?: unknown;
  readonly session?: unknown;
  readonly job?: unknown;
  readonly type?: unknown;
  readonly after?: unknown;
  readonly limit?: unknown;
  /** Only the rows written with this token (its id, as `baton token list` shows it). */
  readonly token?: unknown;
}

/** Applies a check only when the value was given. */
function optional<T>(value: unknown, check: (raw: unknown) => T): T | undefined {
  return value === undefined ? undefined : check(value);
}

function limit(value: unknown): number | undefined {
  return optional(value, (raw) => validateInteger('limit', raw, 1, LIST_LIMIT_MAX));
}

export function parseTaskAdd(input: TaskAddInput): TaskAddParams {
  const labels = input.labels;
  if (labels !== undefined && !Array.isArray(labels)) {
    throw new InvalidInputError('labels must be a list of names', 'give each label separately');
  }
  return {
    key: validateKey(input.key),
    title: optional(input.title, validateTitle),
    priority: optional(input.priority, validatePriority),
    project: optional(input.project, (value) => validateName('project', value)),
    assignee: optional(input.assignee, (value) => validateName('assignee', value)),
    labels: labels === undefined ? undefined : validateLabels(labels as unknown[]),
    body: optional(input.body, validateBody),
    url: optional(input.url, validateUrl),
    reviewRequired: optional(
      input.review,
      (value) => validateOneOf('review', value, REVIEW_MODES) === 'required',
    ),
    after: optional(input.after, afterKeys),
    ...actorParams(input.by),
  };
}

/** The most tasks one add may name to wait for (as many as labels). */
const AFTER_MAX = 64;

/** The keys a task added `after` them waits for: a list of task keys. */
function afterKeys(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > AFTER_MAX) {
    throw new InvalidInputError(
      `after must be a list of at most ${AFTER_MAX} task keys`,
      'give each task it waits for separately',
    );
  }
  return value.map((key: unknown) => validateKey(key));
}

/** Who asked, as store params: `actor` in words, `by` the session they acted under. */
export function actorParams(by: Actor | undefined): { actor?: string; by?: SessionId } {
  if (by === undefined) return {};
  return by.session === undefined ? { actor: by.name } : { actor: by.name, by: by.session };
}

const REVIEW_MODES = ['required', 'none'] as const;

/** Where the task lives outside Baton: an http(s) URL. */
function validateUrl(value: unknown): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text.length > URL_LENGTH_MAX || !isWebAddress(text)) {
    throw new InvalidInputError(
      `url must be an http(s) address of at most ${URL_LENGTH_MAX} characters, got ${quoted(value)}`,
      'give the task page, such as https://github.com/acme/api/issues/1246',
    );
  }
  return refuseHalfCharacter('url', text);
}

export function parseTaskList(input: TaskListInput): TaskListParams {
  return {
    project: optional(input.project, (value) => validateName('project', value)),
    assignee: optional(input.assignee, (value) => validateName('assignee', value)),
    state: optional(input.state, (value) => validateOneOf('task state', value, TASK_STATES)),
    label: optional(input.label, (value) => validateName('label', value)),
    gated: optional(input.gated, (value) => trueOrFalse('gated', value)),
    blocked: optional(input.blocked, (value) => trueOrFalse('blocked', value)),
    after: optional(input.after, (value) => validateKey(value)),
    limit: limit(input.limit),
  };
}

function trueOrFalse(name: string, value: unknown): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new InvalidInputError(
    `${name} must be true or false, got ${quoted(value)}`,
    `give ${name}=true or false`,
  );
}

export function parseSessionStart(input: SessionStartInput): SessionStartParams {
  const kind = input.kind === undefined ? 'agent' : validateOneOf('session kind', input.kind, SESSION_KINDS);
  const ttl = optional(input.ttl, (value) =>
    validateDuration('ttl', value, SESSION_TTL_MIN_MS, SESSION_TTL_MAX_MS),
  );
  return {
    kind,
    host: validateName('host', input.host),
    pid: validateInteger('pid', input.pid, 0, PID_MAX),
    name: optional(input.name, (value) => validateName('session name', value)),
    ttlMs: sessionTtlMs(kind, ttl) ?? undefined,
  };
}

export function parseHeartbeat(input: HeartbeatInput): HeartbeatParams {
  const session = validateId('session', input.session);
  if ((input.key === undefined) !== (input.epoch === undefined)) {
    throw new InvalidInputError(
      'a heartbeat for a claim needs both the task key and the claim epoch',
      'give both --key and --epoch, or neither to beat for the session alone',
    );
  }
  if (input.key === undefined) return { session };
  return { session, claim: { key: validateKey(input.key), epoch: validateEpoch(input.epoch) } };
}

export function parseClaim(input: ClaimInput): ClaimAcquireParams {
  return { key: validateKey(input.key), session: validateId('session', input.session) };
}

export function parseRelease(input: ReleaseInput): ClaimReleaseParams {
  return {
    ...parseClaim(input),
    epoch: validateEpoch(input.epoch),
    outcome:
      input.outcome === undefined ? 'released' : validateOneOf('outcome', input.outcome, RELEASE_OUTCOMES),
  };
}

export function parseForceRelease(input: ForceReleaseInput): ClaimForceReleaseParams {
  return {
    key: validateKey(input.key),
    reason: validateReason('reason', input.reason, REASON_LENGTH_MAX),
    by: input.by,
  };
}

/** A job's RAM budget in MB: 0 asks for none, so it is kept as none (null), as a budget left out is. */
function ramBudget(value: unknown): number | null {
  const mb = validateInteger('RAM (MB)', value, 0, RAM_MB_MAX);
  return mb === 0 ? null : mb;
}

/** A retry's RAM budget in MB: left out, the ended job's; 0, none (as `baton enqueue --ram-mb 0`). */
export function parseRetryRam(value: unknown): number | null | undefined {
  return optional(value, ramBudget);
}

export function parseEnqueue(input: EnqueueInput): JobEnqueueParams {
  return {
    key: validateKey(input.key),
    priority: optional(input.priority, validatePriority),
    ramMb: optional(input.ramMb, ramBudget),
    command: optional(input.command, validateCommand),
    attemptMax: optional(input.attempts, (value) => validateInteger('attempts', value, 1, ATTEMPT_MAX_LIMIT)),
    timeLimitMs: optional(input.timeLimit, (value) =>
      validateDuration('time limit', value, TIME_LIMIT_MIN_MS, TIME_LIMIT_MAX_MS),
    ),
    ...actorParams(input.by),
  };
}

export function parseJobList(input: JobListInput): JobListParams {
  return {
    status: optional(input.status, validateStatuses),
    key: optional(input.key, validateKey),
    limit: limit(input.limit),
    before: optional(input.before, (value) => validateId('before', value)),
  };
}

/** A page of a list read by row id (the ledger, a task's effects): after a row id from 0, a limit. */
export function parsePage(input: { readonly after?: unknown; readonly limit?: unknown }) {
  return {
    afterId: optional(input.after, (value) => validateInteger('after id', value, 0, Number.MAX_SAFE_INTEGER)),
    limit: limit(input.limit),
  };
}

export function parseAudit(input: AuditInput): AuditListParams {
  return {
    key: optional(input.key, validateKey),
    session: optional(input.session, (value) => validateId('session', value)),
    jobId: optional(input.job, (value) => validateId('job', value)),
    type: optional(input.type, (value) => validateOneOf('audit type', value, AUDIT_TYPES)),
    ...parsePage(input),
    token: optional(input.token, validateTokenId),
  };
}

/** A job's command template (enqueue's --command, up's --agent-command): not empty, bounded, no NUL. */
export function validateCommand(value: unknown): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new InvalidInputError('the command template is empty', 'give a command such as "npm test"');
  }
  if (value.length > COMMAND_LENGTH_MAX) {
    throw new InvalidInputError(
      `the command template is ${value.length} characters long; the limit is ${COMMAND_LENGTH_MAX}`,
      'move the long part into a script and run that',
    );
  }
  if (value.includes('\u0000')) {
    throw new InvalidInputError('the command template contains a NUL character', 'remove it');
  }
  refuseHalfCharacter('the command template', value);
  // Unknown placeholders and placeholders where they would not stay data are refused here, at
  // enqueue, rather than failing every attempt on a runner.
  return validateCommandTemplate(value);
}

function validateStatuses(value: unknown): JobState[] {
  const raw = typeof value === 'string' ? value.split(',').map((status) => status.trim()) : value;
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new InvalidInputError('job status filter is empty', `give one of ${JOB_STATES.join(', ')}`);
  }
  return [...new Set(raw.map((status: unknown) => validateOneOf('job status', status, JOB_STATES)))];
}

/** A task body: any text up to BODY_LENGTH_MAX characters. */
function validateBody(value: unknown): string {
  if (typeof value !== 'string') throw new InvalidInputError('body must be text');
  if (value.length > BODY_LENGTH_MAX) {
    throw new InvalidInputError(
      `body is ${value.length} characters long; the limit is ${BODY_LENGTH_MAX}`,
      'shorten it, or link to the long text with --url',
    );
  }
  if (value.includes('\u0000')) throw new InvalidInputError('body contains a NUL character', 'remove it');
  return refuseHalfCharacter('body', value);
}
