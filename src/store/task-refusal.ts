/**
 * The refusal both engines throw when a task's state does not allow what was asked (core/task.ts):
 * it names the state, since when and by whom (and why, when a reason was given), and says how to
 * move the task on.
 */
import { TaskStateError } from '../core/errors.js';
import { taskStateHint, type TaskAction, type TaskState, type TaskUse } from '../core/task.js';
import type { Instant } from '../core/time.js';

export interface TaskStateFacts {
  readonly key: string;
  readonly state: TaskState;
  readonly stateAt: Instant;
  readonly stateBy: string | null;
  readonly stateReason: string | null;
}

const WORDS: Readonly<Record<TaskState, string>> = {
  open: 'open',
  in_review: 'in review',
  done: 'done',
  closed: 'closed',
  escalated: 'escalated',
};

export function taskStateRefusal(t: TaskStateFacts, action: TaskAction | TaskUse): TaskStateError {
  const since = new Date(t.stateAt).toISOString();
  const by = t.stateBy === null ? '' : ` by ${t.stateBy}`;
  const why = t.stateReason === null ? '' : ` (${t.stateReason})`;
  return new TaskStateError(
    t.key,
    t.state,
    `task ${t.key} is ${WORDS[t.state]} since ${since}${by}${why}: cannot ${action} it`,
    taskStateHint(t.key, t.state, action),
    { key: t.key, state: t.state, since, by: t.stateBy, reason: t.stateReason },
  );
}
