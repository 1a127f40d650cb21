/**
 * Job retention's use cases (docs/decisions/0039-job-retention.md): a prune run batch after batch
 * (the store removes one bounded batch per transaction), and the answer for a job id no longer there.
 */
import { NotFoundError } from '../core/errors.js';
import type { JobId } from '../core/job.js';
import { JOB_PRUNE_BATCH } from '../core/job-retention.js';
import type { Instant } from '../core/time.js';
import type { TermRef } from '../store/dispatch-store.js';
import type { JobPruneCursor } from '../store/retention-store.js';
import type { Store } from '../store/store.js';

export interface JobPruneReport {
  /** Jobs removed (a dry run: that would be). */
  readonly removed: number;
  /** Jobs that finished before this (the database's now less the retention) may go. */
  readonly cutoff: Instant | null;
  readonly dryRun: boolean;
  /** The pass stopped at its batch budget with jobs left to remove. */
  readonly more: boolean;
  /** The term was no longer live: the pass stopped (what it removed before stays removed). */
  readonly fenced: boolean;
  /** Where the next pass goes on (`more` alone, else null: the next starts at the head). */
  readonly next: JobPruneCursor | null;
}

export interface JobPruneRun {
  readonly olderThanMs: number;
  readonly dryRun?: boolean | undefined;
  readonly by?: string | undefined;
  /** The leader's term (the leader's pass); each batch is refused once it is not live. */
  readonly term?: TermRef | undefined;
  /** At most this many batches (the leader's pass); left out, until none is left. */
  readonly maxBatches?: number | undefined;
  /** Go on after this job: the `next` of a pass that stopped at its budget (the leader's). */
  readonly after?: JobPruneCursor | undefined;
}

/**
 * Between two batches the event loop is given back: on SQLite a batch is one synchronous call, and
 * a pass of many, back to back, would hold the lease's renewals, heartbeats and HTTP requests of
 * the `baton up` running it (200,000 jobs held it 5.2 s before).
 */
const yieldToTimers = (): Promise<void> => new Promise((resume) => setImmediate(resume));

/**
 * Each batch goes on where the previous one stopped (`after`), and looks at a bounded number of
 * index entries (the store's `scan`), so a pass walks past the jobs it keeps (each task's newest,
 * at the head of `jobs_finished` when old) once, and no batch walks all of them. A pass that
 * stopped at its budget answers `next`, where the following pass may go on (a backlog drained
 * over passes walks the head once); one that reached the end answers null, and
 * the next starts at the head again: what was kept may have become removable since, so every
 * kept job is looked at again once per sweep of the index.
 */
export async function pruneJobs(store: Store, run: JobPruneRun): Promise<JobPruneReport> {
  const dryRun = run.dryRun === true;
  const params = { olderThanMs: run.olderThanMs, limit: JOB_PRUNE_BATCH, term: run.term, by: run.by, dryRun };
  let removed = 0;
  let cutoff: Instant | null = null;
  let after = run.after;
  for (let batch = 0; run.maxBatches === undefined || batch < run.maxBatches; batch++) {
    if (batch > 0) await yieldToTimers();
    const result = await store.retention.pruneJobs({ ...params, after });
    if (!result.ok) return { removed, cutoff, dryRun, more: true, fenced: true, next: null };
    removed += result.removed;
    cutoff = result.cutoff;
    after = result.last ?? undefined;
    // Not `< JOB_PRUNE_BATCH`, nor an empty batch: a batch that looked only at kept jobs removes
    // none, and on PostgreSQL one passes over rows a concurrent prune holds (SKIP LOCKED); the
    // sweep's end (no position to go on from) means none is left.
    if (dryRun || result.last === null)
      return { removed, cutoff, dryRun, more: false, fenced: false, next: null };
  }
  return { removed, cutoff, dryRun, more: true, fenced: false, next: after ?? null };
}

/**
 * The refusal for a job id the store does not have: a plain not-found, saying when retention may
 * have removed it (an id at or below the highest it removed) and where its story still is.
 */
export async function jobNotFound(store: Store, id: JobId): Promise<NotFoundError> {
  const state = await store.retention.state();
  if (id > state.maxId || state.lastCutoff === null) {
    return new NotFoundError('job', String(id), 'list jobs with `baton queue list`');
  }
  return new NotFoundError(
    'job',
    String(id),
    `it may have been removed by job retention (finished jobs up to job ${state.maxId}, the last ` +
      `pass removing those that finished before ${new Date(state.lastCutoff).toISOString()}); ` +
      `its ledger rows remain: baton audit --job ${id}`,
  );
}
