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

export function taskStateRefusal(facts: TaskStateFacts, action: TaskAction | TaskUse): TaskStateError {
  const since = new Date(facts.stateAt).toISOString();
  const by = facts.stateBy === null ? '' : ` by ${facts.stateBy}`;
  const why = facts.stateReason === null ? '' : ` (${facts.stateReason})`;
  return new TaskStateError(
    facts.key,
    facts.state,
    `task ${facts.key} is ${WORDS[facts.state]} since ${since}${by}${why}: cannot ${action} it`,
    taskStateHint(facts.key, facts.state, action),
    { key: facts.key, state: facts.state, since, by: facts.stateBy, reason: facts.stateReason },
  );
}
