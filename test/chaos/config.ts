/** What the orchestrator tells each chaos process, and the timings every part agrees on. */

/** Short timings so faults play out in seconds (reliability.md: TTLs of 2-3 s). */
export const TIMING = {
  leaseTtlMs: 2000,
  retryMs: 500,
  heartbeatMs: 500,
  staleAfterMs: 2500,
  /** The dispatcher's sweep runs every min(2 s, heartbeat interval). */
  sweepMs: 500,
  /** Scheduling slack on a loaded two-core machine. */
  slackMs: 4000,
} as const;

export interface WorkerConfig {
  readonly url: string;
  readonly history: string;
  readonly name: string;
  /** Restart count of this worker slot: with the seed, fixes its random stream. */
  readonly generation: number;
  readonly seed: number;
  readonly tasks: readonly string[];
  /** Workspaces a claim holder sometimes also locks exclusively while it works. */
  readonly workspaces: readonly string[];
  /** The workspace some jobs must run alone in (the dispatcher places them with its lock). */
  readonly jobWorkspace: string | null;
  readonly heartbeatMs: number;
  /** An operation without an answer for this long is unknown (`info`) and the worker restarts. */
  readonly opTimeoutMs: number;
  /** Chance per iteration of enqueueing a job. */
  readonly jobChance: number;
  readonly jobCommand: string;
  /** The negative control: the worker's store does not fence effects (a test-only switch). */
  readonly unsafeDisableFencing: boolean;
  /** SQLite: after SIGUSR2, the next effect write holds BEGIN IMMEDIATE open this long. */
  readonly holdMs: number;
}

export const WORKER_ENV = 'CHAOS_WORKER';
/** A worker exits with this after an unknown outcome; the supervisor restarts it. */
export const EXIT_UNKNOWN = 75;

/** What the batch-kill scenario (batch-kill.ts) tells each batch worker (batch-worker.ts). */
export interface BatchWorkerConfig {
  readonly url: string;
  readonly history: string;
  readonly name: string;
  readonly take: number;
  readonly leaseMs: number;
  /** The negative control: acknowledge completions before their commit. */
  readonly ackEarly: boolean;
}

export const BATCH_WORKER_ENV = 'BATCH_WORKER';

/** What the hand-off-kill scenario (hand-off-kill.ts) tells each waiting worker (hand-off-worker.ts). */
export interface HandOffWorkerConfig {
  readonly url: string;
  readonly history: string;
  readonly name: string;
  /** The worker's session TTL; it beats at a fifth of it. */
  readonly ttlMs: number;
  /** The negative control: acknowledge completions before their commit. */
  readonly ackEarly: boolean;
}

export const HAND_OFF_WORKER_ENV = 'HAND_OFF_WORKER';
