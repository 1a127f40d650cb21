/**
 * The part of the port the task lifecycle uses (core/task.ts): the actions humans, importers and
 * agents take on a task's state, escalations, review gates, `next`, and the store's settings.
 * Every change is one atomic step on the database clock, with its ledger rows (who made it) in
 * the same statement or transaction; each engine changes a task's state in one place, so a later
 * outbox row can ride along with every change.
 */
import type { Claim, Holder } from '../core/claim.js';
import type { JobId } from '../core/job.js';
import type { SessionId } from '../core/session.js';
import type { Actor, Task, TaskGate, TaskState } from '../core/task.js';
import type { Instant } from '../core/time.js';

/** The actions a person (or an importer) takes; `finish` and `escalate` have steps of their own. */
export type TaskHandAction = 'approve' | 'reject' | 'close' | 'complete' | 'reopen' | 'resolve';

export interface TaskTransitionParams {
  readonly key: string;
  readonly action: TaskHandAction;
  readonly by: Actor;
  /** Why: kept as the task's state reason; a rejection's is also kept for the next run. */
  readonly reason?: string | null | undefined;
}

export interface TaskEscalateParams {
  readonly key: string;
  readonly reason: string;
  readonly by: Actor;
  /** The claim the caller works under; the escalation is `fenced` unless it is the live one. */
  readonly claim?: { readonly session: SessionId; readonly epoch: number } | undefined;
}

export type TaskEscalateResult =
  | {
      readonly ok: true;
      readonly task: Task;
      /** The claim ended `escalated` (its epoch), and the job ended `escalated`, if any. */
      readonly claimEpoch: number | null;
      readonly jobId: JobId | null;
    }
  | {
      readonly ok: false;
      readonly reason: 'fenced';
      readonly current: Holder | null;
      /** Set when the claim's session has ended (or was rescued), as a release says it. */
      readonly sessionEnded?: true;
    };

export interface TaskGateParams {
  readonly key: string;
  readonly gate: TaskGate;
  readonly by: Actor;
  /** A note kept in the ledger with an approval. */
  readonly note?: string | null | undefined;
}

/** An edge: task `key` waits until task `on` is done (docs/decisions/0035-task-dependencies.md). */
export interface TaskDependParams {
  readonly key: string;
  readonly on: string;
  readonly by: Actor;
}

/** A task at the other end of a dependency, with its state as read. */
export interface TaskLink {
  readonly key: string;
  readonly title: string;
  readonly state: TaskState;
}

/** What a task waits for (its dependencies) and what waits for it (its dependents), by key. */
export interface TaskDependencies {
  readonly waitsFor: readonly TaskLink[];
  readonly waitedBy: readonly TaskLink[];
}

/** The lifecycle's dependency operations, which each engine keeps in a file of its own. */
export type DependencyOps = 'depend' | 'undepend' | 'dependencies';

export interface TaskNextParams {
  readonly session: SessionId;
  readonly project?: string | undefined;
  readonly label?: string | undefined;
}

export interface TaskNextResult {
  readonly task: Task;
  readonly claim: Claim;
}

export interface Setting {
  readonly name: string;
  readonly value: string;
  readonly updatedAt: Instant;
  readonly updatedBy: string | null;
}

export interface LifecycleStore {
  readonly lifecycle: {
    /**
     * Moves the task by a person's action (core/task.ts's table); TaskStateError when the action
     * cannot leave the task's state, NotFoundError for an unknown task. Leaving `open` for done
     * or closed cancels the task's active job in the same step; a rejection keeps its reason as
     * the task's feedback, and reaching done clears it.
     */
    transition(params: TaskTransitionParams): Promise<Task>;
    /**
     * Hands the task to a human: ends its live claim (`escalated`), ends its active job
     * (`escalated`) and moves the task to `escalated` with the reason, in one step. With `claim`,
     * `fenced` and nothing changed unless it is the live claim (`sessionEnded` when that claim's
     * session is no longer live). TaskStateError unless the task
     * is open or in review.
     */
    escalate(params: TaskEscalateParams): Promise<TaskEscalateResult>;
    /** Puts the task behind a gate (idempotent); TaskStateError unless the task is open. */
    gate(params: TaskGateParams): Promise<Task>;
    /** Opens the task's gate; ConflictError when the task does not wait behind that gate. */
    approveGate(params: TaskGateParams): Promise<Task>;
    /**
     * Claims the next eligible task for the session, in one step: open, behind no gate, no
     * active job, and no live claim (or one whose session passed its TTL, taken over as
     * `expired`); by priority, then age. null when none is eligible. FencedError (NotFoundError)
     * for a session that is not live (unknown).
     */
    next(params: TaskNextParams): Promise<TaskNextResult | null>;
    /**
     * Makes `key` wait until `on` is done, audited `task:depended` (idempotent: an edge that exists
     * changes nothing and writes no row). NotFoundError for an unknown task; InvalidInputError
     * for a task depending on itself or an edge that would close a cycle, checked in the same
     * step as the insert (on PostgreSQL under one advisory lock, so two adds at once that
     * together close a cycle are decided one after the other). Returns `key`'s dependencies.
     */
    depend(params: TaskDependParams): Promise<TaskDependencies>;
    /** Removes the edge, audited `task:undepended`; ConflictError when there is none. */
    undepend(params: TaskDependParams): Promise<TaskDependencies>;
    /** The task's dependencies and dependents, by key; NotFoundError for an unknown task. */
    dependencies(key: string): Promise<TaskDependencies>;
    /** Escalated tasks, oldest escalation first. */
    escalations(params?: { readonly limit?: number | undefined }): Promise<readonly Task[]>;
  };

  readonly settings: {
    /** The setting's value, or null when it was never set. */
    get(name: string): Promise<string | null>;
    /** Sets the value, audited `setting:set` with who set it. */
    set(params: { readonly name: string; readonly value: string; readonly by: Actor }): Promise<Setting>;
    list(): Promise<readonly Setting[]>;
  };
}
