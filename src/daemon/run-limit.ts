/**
 * The time limit of one agent run (docs/decisions/0037-run-time-limit.md): the job's own limit,
 * else the runner's (`baton up --time-limit`), over the run's length from its start as the
 * database recorded it. Each tick asks the store (progress.markTimedOut), which judges on the
 * database clock, like a stall, so a paused or slow host, or one whose clock is off, cannot
 * stretch or cut a run; the first verdict past the limit writes the `job:timed_out` row, and the
 * run is killed and failed with the reason given here.
 */
import type { Job } from '../core/job.js';
import type { Store } from '../store/store.js';

export interface RunLimitOptions {
  readonly store: Store;
  readonly job: Job;
  readonly runnerSession: number;
  /** The runner's limit for a job without one of its own; null or left out: none. */
  readonly timeLimitMs?: number | null | undefined;
  readonly log: (line: string) => void;
}

export class RunLimit {
  private why: string | null = null;

  constructor(private readonly options: RunLimitOptions) {}

  /** The limit this run is held to, or null when neither the job nor the runner sets one. */
  get limitMs(): number | null {
    return this.options.job.timeLimitMs ?? this.options.timeLimitMs ?? null;
  }

  /** True once the run has passed its limit (and must be killed); a store that fails answers false. */
  async tick(): Promise<boolean> {
    if (this.limitMs === null) return false; // no limit: not a query more per tick
    const { job, runnerSession, store } = this.options;
    const verdict = await store.progress
      .markTimedOut({
        id: job.id,
        session: runnerSession,
        epoch: job.epoch,
        defaultLimitMs: this.options.timeLimitMs ?? null,
      })
      .catch(() => null); // the database is away: the next tick asks again
    if (verdict === null || !verdict.timedOut) return false;
    const own = job.timeLimitMs === null ? "the runner's" : 'its';
    const limit = `${verdict.limitMs / 1000} s`;
    const started = new Date(verdict.startedAt).toISOString();
    this.why = `timed out: ran past ${own} time limit of ${limit} (started ${started})`;
    this.options.log(`job ${job.id} ${job.key}: ${this.why}`);
    return true;
  }

  /** Why a run killed for its limit failed: the job's reason (null when it was not). */
  reason(): string | null {
    return this.why;
  }
}
