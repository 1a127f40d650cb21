/**
 * The three tables stats() keeps running counts of (prefix-totals.ts, docs/decisions/0040), as SQL
 * fragments both engines share: what names a row, what makes it final, which rows count at all,
 * and the deletion mark that tells a cache its rows may be gone.
 */
import type { Count, StoreStats } from './observe-store.js';
import type { PrefixCounts } from './prefix-totals.js';

/** Bumped by a trigger on every statement (PostgreSQL) or row (SQLite) that deletes from the table (migration 0037). */
const deletionMark = (table: string): string => `(SELECT n FROM row_deletions WHERE tbl = '${table}')`;
export interface PrefixSpec {
  readonly table: string;
  /** The row's name in the counts. */
  readonly name: string;
  /** True once the row can never change again. */
  readonly final: string;
  /** Only rows that match are counted. */
  readonly where: string;
  /** A number that changes whenever rows of the table are deleted. */
  readonly mark: string;
}

/** Jobs by status; terminal jobs are final (a retry queues a new job). */
export const JOBS_SPEC: PrefixSpec = {
  table: 'jobs',
  name: 'status',
  final: `status NOT IN ('queued', 'claimed', 'running')`,
  where: 'true',
  mark: deletionMark('jobs'),
};

/** Claims by outcome, `held` while live; a released claim is final. */
export const CLAIMS_SPEC: PrefixSpec = {
  table: 'claims',
  name: `coalesce(outcome, 'held')`,
  final: 'released_at IS NOT NULL',
  where: 'true',
  mark: deletionMark('claims'),
};

/**
 * Ledger rows of a job's start (`started`): every ledger row is final. A prune removes the oldest
 * rows (ids up to its last one), so the lowest id is the ledger's deletion mark.
 */
export function ledgerSpec(started: string): PrefixSpec {
  return {
    table: 'audit_events',
    name: `'started'`,
    final: 'true',
    where: `(${started})`,
    mark: '(SELECT coalesce(min(id), 0) FROM audit_events)',
  };
}

/** The figures of StoreStats the running counts give. */
export type Totals = Pick<
  StoreStats,
  'jobsByStatus' | 'jobsStarted' | 'claimsGranted' | 'claimsHeld' | 'claimsByOutcome'
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
    claimsGranted: held + ended.reduce((sum, outcome) => sum + outcome.count, 0),
    claimsHeld: held,
    claimsByOutcome: ended,
  };
}
