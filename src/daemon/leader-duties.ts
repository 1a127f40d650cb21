/**
 * Work `baton up` does only while it leads, beside dispatch and sealing: duties handed in by the
 * composition root, so the daemon knows nothing of what they are (the GitHub backlog's sync and
 * label projector, src/github/), and auto-enqueue, the time-limit sweep, the output stream's trim and
 * job retention and the GitHub outbox's, which every leader runs. Each duty runs on its own timer; a pass that fails is
 * logged (once per new message) and tried again at the next tick; a standby never runs one.
 */
import { autoEnqueue } from '../coordinator/auto-enqueue.js';
import { OUTPUT_KEEP_ENDED } from '../core/output-stream.js';
import type { SessionId } from '../core/session.js';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';
import type { TermRef } from '../store/dispatch-store.js';
import { JOB_PRUNE_EVERY_MS, JOB_PRUNE_PASS_BATCHES, JOB_RETAIN_DEFAULT_MS } from '../core/job-retention.js';
import type { LogPrunePolicy } from '../os/log-prune.js';
import type { LeaderElector } from './leader-elector.js';
import { LOG_KEEP_DEFAULT } from './log-pruner.js';
import { pruneJobs } from '../coordinator/job-retention.js';
import {
  OUTBOX_PRUNE_BATCH,
  OUTBOX_PRUNE_EVERY_MS,
  OUTBOX_PRUNE_PASS_BATCHES,
  OUTBOX_RETAIN_DEFAULT_MS,
} from '../core/outbox-retention.js';
import type { JobPruneCursor } from '../store/retention-store.js';

/** How often a leading `baton up` looks for open tasks to queue when auto-enqueue is on. */
const AUTO_ENQUEUE_EVERY_MS = 2_000;

export interface LeaderDuty {
  readonly name: string;
  readonly everyMs: number;
  /**
   * One pass. `signal` is the duties' stop: a pass that may wait long (GitHub's rate limit, up to
   * an hour) ends at once on it, so `baton up` stops within a second or so, not at GitHub's reset.
   */
  run(signal?: AbortSignal): Promise<void>;
}

export class LeaderDuties {
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];

  constructor(
    private readonly options: {
      readonly duties: readonly LeaderDuty[];
      readonly clock: Clock;
      readonly leading: () => boolean;
      readonly log: (line: string) => void;
    },
  ) {}

  start(): void {
    if (this.loops.length > 0) return;
    this.loops = this.options.duties.map((duty) => this.loop(duty));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async loop(duty: LeaderDuty): Promise<void> {
    let lastFailure = '';
    while (!this.abort.signal.aborted) {
      const leading = this.options.leading();
      if (leading) {
        try {
          await duty.run(this.abort.signal);
          lastFailure = '';
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          // A pass ended by the stop did not fail: said once, as what it was doing.
          if (this.abort.signal.aborted) this.options.log(`${duty.name}: ended by the stop: ${message}`);
          else if (message !== lastFailure) this.options.log(`${duty.name} failed: ${message}`);
          lastFailure = message;
        }
      }
      // A standby looks again soon, so a new leader's first pass does not wait a whole period.
      const napMs = leading ? duty.everyMs : Math.min(duty.everyMs, 500);
      await this.options.clock.sleep(napMs, this.abort.signal).catch(() => undefined);
    }
  }
}

/** Auto-enqueue (coordinator/auto-enqueue.ts) while leading: a pass every 2 s, each job it queued logged. */
function autoEnqueueDuty(store: Store, session: SessionId, log: (line: string) => void): LeaderDuty {
  return {
    name: 'auto-enqueue',
    everyMs: AUTO_ENQUEUE_EVERY_MS,
    run: async () => {
      const queued = await autoEnqueue(store, session);
      if (queued.length > 0)
        log(`auto-enqueue: queued ${queued.map((job) => `job ${job.id} (${job.key})`).join(', ')}`);
    },
  };
}

/** How often a leading `baton up` trims the output stream. */
const OUTPUT_TRIM_EVERY_MS = 60_000;

/**
 * The output stream's trim while leading (docs/decisions/0029): every attempt no run holds keeps
 * its last OUTPUT_KEEP_ENDED bytes (a cancelled run, or one taken over, never made its last flush),
 * and jobs that ended before the log files' age limit (`--log-keep-days`) keep none.
 */
function outputTrimDuty(store: Store, clock: Clock, keepMs: number): LeaderDuty {
  return {
    name: 'output trim',
    everyMs: OUTPUT_TRIM_EVERY_MS,
    run: async () => {
      await store.output.trim({ keep: OUTPUT_KEEP_ENDED, endedBefore: clock.wallNow() - keepMs });
    },
  };
}

/**
 * Job retention while leading (docs/decisions/0039-job-retention.md): a pass every 10 minutes
 * removes finished jobs that ended more than `retainMs` ago, a bounded number of batches under the
 * leader's term (a deposed leader's batch is fenced), so a backlog of millions drains over passes;
 * a pass that stopped at its budget leaves where it was for the next, of the same term.
 */
function jobRetentionDuty(
  store: Store,
  retainMs: number,
  term: () => TermRef | null,
  log: (line: string) => void,
): LeaderDuty {
  let resume: { readonly term: number; readonly at: JobPruneCursor } | null = null;
  return {
    name: 'job retention',
    everyMs: JOB_PRUNE_EVERY_MS,
    run: async () => {
      const ref = term();
      if (ref === null) return;
      const maxBatches = JOB_PRUNE_PASS_BATCHES;
      const after = resume?.term === ref.term ? resume.at : undefined;
      const report = await pruneJobs(store, { olderThanMs: retainMs, term: ref, maxBatches, after });
      resume = report.next === null ? null : { term: ref.term, at: report.next };
      if (report.removed === 0 || report.cutoff === null) return;
      const before = new Date(report.cutoff).toISOString();
      const more = report.more && !report.fenced ? '; more at the next pass' : '';
      log(`job retention: removed ${report.removed} finished jobs that ended before ${before}${more}`);
    },
  };
}

/**
 * The GitHub outbox's retention while leading (docs/decisions/0013, "Retention of applied rows"): a
 * pass every 10 minutes removes rows applied more than `retainMs` ago, up to
 * OUTBOX_PRUNE_PASS_BATCHES batches, the event loop given back between two. Every leader runs it,
 * with `--github` or without: rows applied under an earlier configuration go too. No term fences
 * it: removing a row applied long ago is the same whoever does it, and twice is once.
 */
function outboxRetentionDuty(store: Store, retainMs: number, log: (line: string) => void): LeaderDuty {
  return {
    name: 'github outbox retention',
    everyMs: OUTBOX_PRUNE_EVERY_MS,
    run: async () => {
      let removed = 0;
      let cutoff = 0;
      for (let batch = 0; batch < OUTBOX_PRUNE_PASS_BATCHES; batch++) {
        if (batch > 0) await new Promise((resume) => setImmediate(resume));
        const result = await store.github.prune({ olderThanMs: retainMs, limit: OUTBOX_PRUNE_BATCH });
        removed += result.removed;
        cutoff = result.cutoff;
        // Not `=== 0`: on PostgreSQL a batch passes over rows the projector holds (SKIP LOCKED).
        if (result.removed < OUTBOX_PRUNE_BATCH) break;
      }
      if (removed === 0) return;
      const before = new Date(cutoff).toISOString();
      log(`github outbox retention: removed ${removed} rows applied before ${before}`);
    },
  };
}

/** How often a leading `baton up` looks for pull-held jobs past their own time limit, and how many per pass. */
const TIME_LIMIT_SWEEP_EVERY_MS = 2_000;
const TIME_LIMIT_SWEEP_BATCH = 100;
/** Batches in one pass at most: a leader deposed or stopped mid-pass stops within this many. */
const TIME_LIMIT_SWEEP_BATCHES = 10;

/**
 * The time-limit sweep while leading (docs/decisions/0037-run-time-limit.md, "The leader's sweep"):
 * a running job past its own limit that no runner runs (taken in pull mode, not placed by a
 * dispatcher) is failed `timed out` on the database clock, its rows naming this leader's session
 * (`by: 'leader'`, `bySession`), so a worker that hangs or died with
 * its session still beating no longer holds the job, its task and its workspace for ever. Every
 * 2 s, as often as a runner checks its own runs; a full batch is followed by the next at once, up
 * to TIME_LIMIT_SWEEP_BATCHES (the next tick goes on), so a pass ends soon after leadership does.
 */
function timeLimitSweepDuty(store: Store, session: SessionId, log: (line: string) => void): LeaderDuty {
  return {
    name: 'time-limit sweep',
    everyMs: TIME_LIMIT_SWEEP_EVERY_MS,
    run: async () => {
      for (let batch = 0; batch < TIME_LIMIT_SWEEP_BATCHES; batch++) {
        const { failed } = await store.progress.sweepTimedOut({
          max: TIME_LIMIT_SWEEP_BATCH,
          leaderSession: session,
        });
        for (const job of failed)
          log(`time limit: failed job ${job.id} (${job.key}): ${job.reason ?? 'timed out'}`);
        if (failed.length < TIME_LIMIT_SWEEP_BATCH) return;
      }
    },
  };
}

/**
 * What every leader runs besides dispatch and sealing: auto-enqueue, the time-limit sweep, the output
 * stream's trim and, unless `baton up --retain-jobs off` (retainJobsMs null), job retention under the
 * elector's term; unless `--retain-github-outbox off`, the GitHub outbox's retention.
 */
export function leaderUpkeep(
  store: Store,
  session: SessionId,
  clock: Clock,
  log: (line: string) => void,
  options: {
    readonly logKeep?: LogPrunePolicy | undefined;
    readonly retainJobsMs?: number | null | undefined;
    readonly retainOutboxMs?: number | null | undefined;
    readonly elector: Pick<LeaderElector, 'name' | 'leaderTerm'>;
  },
): LeaderDuty[] {
  const { elector } = options;
  const term = (): TermRef | null => {
    const current = elector.leaderTerm();
    return current === null ? null : { lease: elector.name, holder: String(session), term: current };
  };
  const retainMs = options.retainJobsMs === undefined ? JOB_RETAIN_DEFAULT_MS : options.retainJobsMs;
  const outboxMs = options.retainOutboxMs === undefined ? OUTBOX_RETAIN_DEFAULT_MS : options.retainOutboxMs;
  return [
    autoEnqueueDuty(store, session, log),
    timeLimitSweepDuty(store, session, log),
    outputTrimDuty(store, clock, (options.logKeep ?? LOG_KEEP_DEFAULT).maxAgeMs),
    ...(retainMs === null ? [] : [jobRetentionDuty(store, retainMs, term, log)]),
    ...(outboxMs === null ? [] : [outboxRetentionDuty(store, outboxMs, log)]),
  ];
}
