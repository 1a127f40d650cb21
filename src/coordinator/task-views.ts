/**
 * The backlog as the dashboard reads it: a page of tasks by keyset with what blocks each and its
 * active job (store observe.tasksPage, one read), and one task's whole story, which `baton task
 * show` prints too (Coordinator.showTask reads it here).
 */
import type { Claim, Holder } from '../core/claim.js';
import type { Effect } from '../core/effect.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import type { Instant } from '../core/time.js';
import { TASK_STATES, type Task, type TaskEvent, type TaskState } from '../core/task.js';
import { validateId, validateInteger, validateKey, validateName, validateOneOf } from '../core/validate.js';
import type { TaskDependencies } from '../store/lifecycle-store.js';
import type { TaskPageRow } from '../store/observe-store.js';
import type { Store } from '../store/store.js';
import { withHeldReasons } from './held-reasons.js';
import { Lifecycle } from './lifecycle.js';
import { quoted } from '../core/text.js';

/** Jobs shown with a task. */
const TASK_JOBS_SHOWN = 10;
const PAGE_MAX = 200;

/** The states the backlog shows unless told otherwise: the ones still to be worked or decided. */
const ACTIVE_TASK_STATES: readonly TaskState[] = ['open', 'in_review', 'escalated'];

export interface TaskDetail {
  readonly task: Task;
  /** The live claim and who holds it, or null when the task is free. */
  readonly claim: Claim | null;
  readonly holder: Holder | null;
  /** The task's jobs, active ones first: at most TASK_JOBS_SHOWN. */
  readonly jobs: readonly Job[];
  /** Whether it has more jobs than those (`baton queue list --key K` and the Queue list them all). */
  readonly moreJobs: boolean;
  /** Its history of states, gates and dependency changes, oldest first. */
  readonly history: readonly TaskEvent[];
  /** The pull requests its runs recorded (`baton effect … --kind pr`), oldest first. */
  readonly prs: readonly Effect[];
  /** What it waits for and what waits for it (task dependencies), by key. */
  readonly dependencies: TaskDependencies;
}

/** The backlog's filters, raw from a query string. `state`: a state, `active` (the default) or `any`. */
export interface TasksInput {
  readonly state?: unknown;
  readonly label?: unknown;
  readonly project?: unknown;
  readonly blocked?: unknown;
  readonly before?: unknown;
  readonly limit?: unknown;
}

export interface TaskPage {
  readonly now: Instant;
  readonly items: readonly TaskPageRow[];
  /** The keyset of the next page (pass it as `before`), or null at the end. */
  readonly next: number | null;
}

const optional = <T>(value: unknown, check: (raw: unknown) => T): T | undefined =>
  value === undefined || value === '' ? undefined : check(value);

function states(value: unknown): readonly TaskState[] | undefined {
  if (value === undefined || value === '' || value === 'active') return ACTIVE_TASK_STATES;
  if (value === 'any') return undefined;
  return [validateOneOf('task state', value, TASK_STATES)];
}

/** A checkbox's value: on when sent (`on`, `1`, `true`), off when absent or empty. */
function flag(name: string, value: unknown): boolean {
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'on' || value === '1' || value === 'true') return true;
  throw new InvalidInputError(
    `${name} must be on or off, got ${quoted(value)}`,
    `give ${name}=1 or leave it out`,
  );
}

/** A page of the backlog, newest task first; InvalidInputError names a bad filter. */
export async function tasksPage(store: Store, input: TasksInput = {}): Promise<TaskPage> {
  const limit = optional(input.limit, (raw) => validateInteger('limit', raw, 1, PAGE_MAX)) ?? 50;
  const [now, items] = await Promise.all([
    store.now(),
    store.observe.tasksPage({
      states: states(input.state),
      project: optional(input.project, (value) => validateName('project', value)),
      label: optional(input.label, (value) => validateName('label', value)),
      blocked: flag('blocked', input.blocked),
      beforeId: optional(input.before, (value) => validateId('task', value)),
      limit,
    }),
  ]);
  return { now, items, next: items.length === limit ? (items.at(-1)?.id ?? null) : null };
}

/** The task with its live claim holder, its recent jobs, history, pull requests and dependencies. */
export async function taskDetail(store: Store, key: unknown): Promise<TaskDetail> {
  const checked = validateKey(key);
  const task = await store.tasks.get(checked);
  if (task === null) throw new NotFoundError('task', checked, 'add it with `baton task add`');
  const claim = await store.claims.current(task.key);
  const session = claim === null ? null : await store.sessions.get(claim.session);
  const holder: Holder | null =
    claim === null
      ? null
      : { session: claim.session, host: session?.host ?? '?', since: claim.claimedAt, epoch: claim.epoch };
  const listed = await store.jobs.list({ key: task.key, limit: TASK_JOBS_SHOWN + 1 });
  const jobs = await withHeldReasons(store, listed.slice(0, TASK_JOBS_SHOWN));
  const history = await new Lifecycle(store).history(task.key);
  const prs = (await store.effects.list({ key: task.key })).filter((effect) => effect.kind === 'pr');
  const dependencies = await store.lifecycle.dependencies(task.key);
  return { task, claim, holder, jobs, moreJobs: listed.length > jobs.length, history, prs, dependencies };
}
