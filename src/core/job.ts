/**
 * A queue job asks for a task to be worked (docs/architecture.md#queue-job). Each transition is one
 * statement guarded by status and epoch; a loser gets `lost` and moves on, never retrying the same
 * item.
 *
 *   queued → claimed → running → done | failed | oom_killed | cancelled
 *      ↑        │          │
 *      └────────┴──────────┘  requeue (recovery or retry policy, guarded by the observed epoch)
 *
 * Any active job ends `escalated` when its task is escalated to a human (`baton escalate`).
 */
import type { Instant } from './time.js';
import type { SessionId } from './session.js';

export const JOB_STATES = [
  'queued',
  'claimed',
  'running',
  'done',
  'failed',
  'oom_killed',
  'cancelled',
  'escalated',
] as const;
export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_JOB_STATES = ['done', 'failed', 'oom_killed', 'cancelled', 'escalated'] as const;
export type TerminalJobState = (typeof TERMINAL_JOB_STATES)[number];

/** A job that is not over: at most one per task (the engines' partial unique index). */
export const ACTIVE_JOB_STATES = ['queued', 'claimed', 'running'] as const;
export type ActiveJobState = (typeof ACTIVE_JOB_STATES)[number];
/** A job a session holds: what its holder's guarded writes (start, finish) may act on. */
export const HELD_JOB_STATES = ['claimed', 'running'] as const;
/** What a holder may end its job as (escalated is the task's doing, never the holder's). */
const JOB_FINISH_STATES = ['done', 'failed', 'oom_killed', 'cancelled'] as const;
export type JobFinishState = (typeof JOB_FINISH_STATES)[number];

export type JobId = number;

/** A run's time limit (Job.timeLimitMs, `baton up --time-limit`): a second at least, a week at most. */
export const TIME_LIMIT_MIN_MS = 1000;
export const TIME_LIMIT_MAX_MS = 7 * 86_400_000;

export interface Job {
  readonly id: JobId;
  readonly key: string;
  readonly status: JobState;
  readonly priority: number;
  readonly queuedAt: Instant;
  readonly ramMb: number | null;
  readonly command: string | null;
  readonly attempt: number;
  readonly attemptMax: number;
  /** Grows with every claim of this job; writes about the job present it. */
  readonly epoch: number;
  readonly session: SessionId | null;
  readonly host: string | null;
  readonly claimedAt: Instant | null;
  readonly startedAt: Instant | null;
  readonly finishedAt: Instant | null;
  readonly exitCode: number | null;
  /** Why the job ended as it did, or why it waits. */
  readonly reason: string | null;
  /** A requeued job is not dispatched before this (retry backoff). */
  readonly runAfter: Instant;
  /** The dispatcher term that placed the job, if a dispatcher did. */
  readonly term: number | null;
  /** The session the agent runs under, and its pid, once spawned. */
  readonly agentSession: SessionId | null;
  readonly pid: number | null;
  readonly outputTail: string | null;
  /**
   * The job's own run time limit in ms, from its start as the database recorded it, or null: the
   * runner's default (`baton up --time-limit`), if any, applies. A run past it is killed and failed.
   */
  readonly timeLimitMs: number | null;
}

const NEXT: Record<JobState, readonly JobState[]> = {
  queued: ['claimed', 'cancelled', 'escalated'],
  claimed: ['running', 'queued', 'failed', 'cancelled', 'escalated'],
  running: ['done', 'failed', 'oom_killed', 'cancelled', 'queued', 'escalated'],
  done: [],
  failed: [],
  oom_killed: [],
  cancelled: [],
  escalated: [],
};

/**
 * The ends a holder may finish its job in from each held state, read off the lifecycle: done and
 * oom_killed only once running. The engines' finish guard is written from this (store/job-guard.ts).
 */
export const FINISH_FROM: Readonly<Record<(typeof HELD_JOB_STATES)[number], readonly JobFinishState[]>> = {
  claimed: JOB_FINISH_STATES.filter((state) => NEXT.claimed.includes(state)),
  running: JOB_FINISH_STATES.filter((state) => NEXT.running.includes(state)),
};

/** The lifecycle as data: checkers and tests read it; the engines encode it in guarded SQL. */
export function isAllowedJobTransition(from: JobState, to: JobState): boolean {
  return NEXT[from].includes(to);
}

export function isTerminalJobState(state: JobState): state is TerminalJobState {
  return (TERMINAL_JOB_STATES as readonly string[]).includes(state);
}

export type JobTransitionResult =
  | { readonly ok: true; readonly job: Job }
  | { readonly ok: false; readonly reason: 'lost'; readonly job: Job | null };

/** A cancelled job's reason: the one given, else who cancelled it (`cancelled by alice@box`). */
export function cancelReason(params: {
  readonly reason?: string | undefined;
  readonly actor?: string | undefined;
}): string {
  if (params.reason !== undefined) return params.reason;
  return params.actor === undefined ? 'cancelled' : `cancelled by ${params.actor}`;
}
