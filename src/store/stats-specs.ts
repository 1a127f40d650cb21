/**
 * The three tables stats() keeps running counts of (prefix-totals.ts, docs/decisions/0040), as SQL
 * fragments both engines share: what names a row, what makes it final, which rows count at all,
 * and the deletion mark that tells a cache its rows may be gone.
 */
import type { Count, StoreStats, TaskStateCount } from './observe-store.js';
import type { PrefixCounts } from './prefix-totals.js';
import type { Instant } from '../core/time.js';

/**
 * Bumped by triggers (migration 0037) when rows of the table are deleted, or a task leaves its
 * final state (reopened) or changes in it.
 */
const deletionMark = (table: string): string => `(SELECT n FROM stats_marks WHERE tbl = '${table}')`;
export interface PrefixSpec {
  readonly table: string;
  /** The row's name in the counts. */
  readonly name: string;
  /** True once the row can never change again. */
  readonly final: string;
  /** Its negation, written as the table's partial index of live rows is (so a read can use it). */
  readonly live: string;
  /** Only rows that match are counted. */
  readonly where: string;
  /** A number that changes whenever a row counted as final is deleted or changes. */
  readonly mark: string;
  /** A time to keep the least of, by name (tasks' state_at); 'NULL' for none. */
  readonly at: string;
  /**
   * Whether job retention's batches (stats_pruned, migration 0038) are read with it, to subtract
   * from the kept counts (only where `at` is 'NULL': a least time cannot be subtracted).
   */
  readonly retained: boolean;
}

/** Jobs by status; terminal jobs are final (a retry queues a new job). */
export const JOBS_SPEC: PrefixSpec = {
  table: 'jobs',
  name: 'status',
  final: `status NOT IN ('queued', 'claimed', 'running')`,
  live: `status IN ('queued', 'claimed', 'running')`,
  where: 'true',
  mark: deletionMark('jobs'),
  at: 'NULL',
  retained: true,
};

/** Claims by outcome, `held` while live; a released claim is final. */
export const CLAIMS_SPEC: PrefixSpec = {
  table: 'claims',
  name: `coalesce(outcome, 'held')`,
  final: 'released_at IS NOT NULL',
  live: 'released_at IS NULL',
  where: 'true',
  mark: deletionMark('claims'),
  at: 'NULL',
  retained: false,
};

/** How a `job:timed_out` row's name in the ledger's counts begins: `timed_out:runner`, … */
const TIMED_OUT = 'timed_out:';

/**
 * Ledger rows of a job's start (`started`), and of a run judged past its time limit
 * (`timed_out:<by>`, `by` the engine's expression of the row's `detail.by`: runner, finish, leader;
 * `unrecorded` for rows written before it was). Every ledger row is final. A prune removes the
 * oldest rows (ids up to its last one), so the lowest id is the ledger's deletion mark.
 */
export function ledgerSpec(started: string, by: string): PrefixSpec {
  return {
    table: 'audit_events',
    name: `CASE WHEN type = 'job:timed_out' THEN '${TIMED_OUT}' || coalesce(${by}, 'unrecorded') ELSE 'started' END`,
    final: 'true',
    live: 'false',
    where: `(${started} OR type = 'job:timed_out')`,
    mark: '(SELECT coalesce(min(id), 0) FROM audit_events)',
    at: 'NULL',
    retained: false,
  };
}

/** A task's name in the counts: its state, and `+gated` while it waits behind a gate. */
const GATED = '+gated';

/**
 * Tasks by state (and gated or not), with the least state_at of each (`at`: the engine's
 * expression of it in ms). A done or closed task is final until reopened, which moves the mark.
 */
export function tasksSpec(at: string): PrefixSpec {
  return {
    table: 'tasks',
    name: `state || CASE WHEN gate IS NULL THEN '' ELSE '${GATED}' END`,
    final: `state IN ('done', 'closed')`,
    live: `state NOT IN ('done', 'closed')`,
    where: 'true',
    mark: deletionMark('tasks'),
    at,
    retained: false,
  };
}

/** TaskStateCounts from the tasks' counts, in state order. */
export function tasksByState(tasks: PrefixCounts): TaskStateCount[] {
  const by = new Map<string, { count: number; gated: number; oldestAt: Instant }>();
  for (const [name, count] of [...tasks.final, ...tasks.live]) {
    if (count === 0) continue;
    const state = name.endsWith(GATED) ? name.slice(0, -GATED.length) : name;
    const was = by.get(state) ?? { count: 0, gated: 0, oldestAt: Number.POSITIVE_INFINITY };
    by.set(state, {
      count: was.count + count,
      gated: was.gated + (name === state ? 0 : count),
      oldestAt: Math.min(was.oldestAt, tasks.least.get(name) ?? Number.POSITIVE_INFINITY),
    });
  }
  return [...by]
    .sort(([one], [other]) => one.localeCompare(other))
    .map(([name, figures]) => ({ name, ...figures }));
}

/** The figures of StoreStats the running counts give. */
export type Totals = Pick<
  StoreStats,
  'jobsByStatus' | 'jobsStarted' | 'jobsTimedOut' | 'claimsGranted' | 'claimsHeld' | 'claimsByOutcome'
>;

const sorted = (map: ReadonlyMap<string, number>): Count[] =>
  [...map]
    .filter(([, count]) => count > 0)
    .sort(([one], [other]) => one.localeCompare(other))
    .map(([name, count]) => ({ name, count }));

/** StoreStats' figures from the counts of the jobs, the claims and the ledger. */
export function totalsOf(jobs: PrefixCounts, claims: PrefixCounts, ledger: PrefixCounts): Totals {
  const held = claims.live.get('held') ?? 0;
  const ended = sorted(claims.final);
  return {
    jobsByStatus: sorted(new Map([...jobs.final, ...jobs.live])),
    jobsStarted: ledger.final.get('started') ?? 0,
    jobsTimedOut: sorted(
      new Map(
        [...ledger.final]
          .filter(([name]) => name.startsWith(TIMED_OUT))
          .map(([name, count]) => [name.slice(TIMED_OUT.length), count]),
      ),
    ),
    claimsGranted: held + ended.reduce((sum, outcome) => sum + outcome.count, 0),
    claimsHeld: held,
    claimsByOutcome: ended,
  };
}
