/**
 * A task is a unit of work with a stable external key (an issue, a ticket, any string up to
 * KEY_LENGTH_MAX). It is the thing a claim protects: at most one session holds a task at a time.
 *
 * Its lifecycle is data, like the job's (job.ts): a task is worked while `open`, waits for a
 * human in `in_review` (its run succeeded and it requires review) or `escalated` (an agent or a
 * rule handed it to a human), and is finished when `done` or `closed` (won't do). Only an open
 * task accepts claims and jobs. Each action names the states it may leave from; the engines
 * encode the same table in their guarded SQL and audit every change with who made it.
 *
 *   open ──finish──▶ done                     (a job ended done, or a claim released done)
 *     │  └─finish──▶ in_review ──approve──▶ done   (the task requires review)
 *     │                   └──reject──▶ open        (the reason is kept for the next run)
 *     ├──escalate──▶ escalated ──resolve──▶ open   (a note is kept for the next run)
 *     ├──close──▶ closed                          (also from in_review and escalated)
 *     └──complete──▶ done                         (by hand or an importer; also from in_review, escalated)
 *   done | closed ──reopen──▶ open
 *
 * A gate is separate from the state: an open task behind a `design` gate is neither placed nor
 * handed out by `next` until a human approves the design.
 */
import type { Instant } from './time.js';
import type { SessionId } from './session.js';

export const TASK_STATES = ['open', 'in_review', 'done', 'closed', 'escalated'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TASK_GATES = ['design'] as const;
export type TaskGate = (typeof TASK_GATES)[number];

/** The gates `baton approve` opens: the design gate, and the review a task in review waits for. */
export const APPROVAL_GATES = ['design', 'review'] as const;
export type ApprovalGate = (typeof APPROVAL_GATES)[number];

export type TaskAction =
  'finish' | 'approve' | 'reject' | 'close' | 'complete' | 'reopen' | 'escalate' | 'resolve';

/** The states each action may leave from. */
export const TASK_ACTION_FROM: Readonly<Record<TaskAction, readonly TaskState[]>> = {
  finish: ['open'],
  approve: ['in_review'],
  reject: ['in_review'],
  close: ['open', 'in_review', 'escalated'],
  complete: ['open', 'in_review', 'escalated'],
  reopen: ['done', 'closed'],
  escalate: ['open', 'in_review'],
  resolve: ['escalated'],
};

/** Where an action leads; `finish` stops in review when the task requires it. */
function taskActionTarget(action: TaskAction, reviewRequired: boolean): TaskState {
  switch (action) {
    case 'finish':
      return reviewRequired ? 'in_review' : 'done';
    case 'approve':
    case 'complete':
      return 'done';
    case 'reject':
    case 'reopen':
    case 'resolve':
      return 'open';
    case 'close':
      return 'closed';
    case 'escalate':
      return 'escalated';
  }
}

export type TaskTransition =
  | { readonly ok: true; readonly from: TaskState; readonly to: TaskState }
  | { readonly ok: false; readonly from: TaskState };

/** The transition an action makes from a task's state, or a refusal naming the state. */
export function planTaskTransition(
  task: { readonly state: TaskState; readonly reviewRequired: boolean },
  action: TaskAction,
): TaskTransition {
  if (!TASK_ACTION_FROM[action].includes(task.state)) return { ok: false, from: task.state };
  return { ok: true, from: task.state, to: taskActionTarget(action, task.reviewRequired) };
}

/** What the user is told to do when an action finds the task in a state it cannot leave from. */
export function taskStateHint(key: string, state: TaskState, action: TaskAction | TaskUse): string {
  switch (state) {
    case 'done':
    case 'closed':
      if (action === 'close' || (action === 'complete' && state === 'done')) return `it is ${state} already`;
      return `reopen it first: \`baton reopen ${key} --reason R\``;
    case 'escalated':
      return `a human must resolve it first: \`baton resolve ${key} [--note N]\``;
    case 'in_review':
      return `review it: \`baton approve ${key} --gate review\`, or \`baton reject ${key} --reason R\``;
    case 'open':
      return openTaskHint(key, action);
  }
}

/** Why an open task refuses an action, and what the user may have meant. */
function openTaskHint(key: string, action: TaskAction | TaskUse): string {
  switch (action) {
    case 'reopen':
      return 'it is open already';
    case 'resolve':
      return (
        'it is not escalated, so there is nothing to resolve ' +
        `(\`baton escalate ${key} --reason R\` hands it to a human)`
      );
    case 'approve':
      return (
        `it is not in review (a task waits there after a successful run when it was added with --review required); ` +
        `to mark it done by hand: \`baton close ${key} --done\``
      );
    case 'reject':
      return (
        'it is not in review, so there is nothing to reject; ' +
        `to stop work on it: \`baton close ${key} --reason R\``
      );
    default:
      return `only a task in ${TASK_ACTION_FROM[action as TaskAction].join(' or ')} can be told to ${action}`;
  }
}

/** What else may meet a task's state: a claim, a job, a gate. Only an open task takes them. */
export type TaskUse = 'claim' | 'enqueue' | 'gate';

/** The reason a vague task is bounced to `escalated` with. */
export const INSUFFICIENT_INFO = 'insufficient-info';
/** Characters of a task's body, and of a reason or note. */
export const BODY_LENGTH_MAX = 65_536;
export const REASON_LENGTH_MAX = 2_000;
export const URL_LENGTH_MAX = 2_000;

/** Words in the text: runs of letters or digits. */
function wordCount(text: string): number {
  return (text.match(/[\p{L}\p{N}]+/gu) ?? []).length;
}

/**
 * The vague-issue rule: a task whose title and body hold fewer than `minWords` words together
 * says too little to be worked, and goes to a human as `insufficient-info`. 0 turns it off.
 */
export function isVague(title: string, body: string, minWords: number): boolean {
  return minWords > 0 && wordCount(`${title} ${body}`) < minWords;
}

export interface Task {
  readonly key: string;
  readonly title: string;
  /** The longer description (an issue's body); the vague-issue rule reads it with the title. */
  readonly body: string;
  /** Where the task lives outside Baton (an issue's page), if anywhere. */
  readonly url: string | null;
  /** Lower runs first; ties break on queued_at, then id. */
  readonly priority: number;
  readonly project: string | null;
  readonly assignee: string | null;
  readonly labels: readonly string[];
  readonly createdAt: Instant;
  /** The epoch of the newest claim ever granted on this task; 0 when never claimed. */
  readonly epoch: number;
  /** The live claim, if any. */
  readonly holder: { readonly session: SessionId; readonly since: Instant } | null;
  readonly state: TaskState;
  /** When the task reached its state, and who moved it there ("job 12", "session 7", a person). */
  readonly stateAt: Instant;
  readonly stateBy: string | null;
  /** Why: an escalation's or a closing's reason, a resolution's note. */
  readonly stateReason: string | null;
  /** A gate the task waits behind before any run is placed or handed out. */
  readonly gate: TaskGate | null;
  /** A successful run leaves the task in review instead of done. */
  readonly reviewRequired: boolean;
  /**
   * The latest human answer, kept for the next run (BATON_FEEDBACK): a rejection's reason, or the
   * note `resolve` answered an escalation with. Null when there is none; reaching done clears it.
   */
  readonly feedback: string | null;
  /** Which answer `feedback` is (BATON_FEEDBACK_FROM); null exactly when `feedback` is. */
  readonly feedbackFrom: FeedbackFrom | null;
}

/** Where a task's feedback came from: a rejection in review, or the answer to an escalation. */
export type FeedbackFrom = 'review' | 'escalation';

/** Who made a change: a person or a process in words, and the session it acted under, if any. */
export interface Actor {
  readonly name: string;
  readonly session?: SessionId | undefined;
}

/**
 * One entry of a task's history: a state change, a gate set, a gate approved, or a dependency
 * added or removed (`on`: the task it waits for, or no longer does).
 */
export interface TaskEvent {
  readonly at: Instant;
  readonly type: 'task:state' | 'task:gated' | 'task:approved' | 'task:depended' | 'task:undepended';
  readonly from: TaskState | null;
  readonly to: TaskState | null;
  readonly action: string | null;
  readonly gate: ApprovalGate | null;
  readonly by: string | null;
  readonly session: SessionId | null;
  readonly reason: string | null;
  /** The other task of a dependency change; null for the other entries. */
  readonly on: string | null;
}
