/** job_retention's rows (migration 0035), one per state, as the RetentionState both engines return. */
import type { JobState } from '../core/job.js';
import type { RetentionState } from './retention-store.js';

export interface StateRow {
  readonly status: string;
  readonly removed: number | string;
  readonly max_id: number | string;
  /** Milliseconds (SQLite) or a Date (PostgreSQL). */
  readonly last_cutoff: number | Date;
  readonly last_at: number | Date;
}

const instant = (value: number | Date): number => (value instanceof Date ? value.getTime() : Number(value));

export function retentionState(rows: readonly StateRow[]): RetentionState {
  const last = rows.reduce<StateRow | null>(
    (newest, row) => (newest === null || instant(row.last_at) > instant(newest.last_at) ? row : newest),
    null,
  );
  return {
    removed: rows.reduce((sum, row) => sum + Number(row.removed), 0),
    byStatus: rows.map((row) => ({ name: row.status as JobState, count: Number(row.removed) })),
    maxId: rows.reduce((max, row) => Math.max(max, Number(row.max_id)), 0),
    lastCutoff: last === null ? null : instant(last.last_cutoff),
    lastAt: last === null ? null : instant(last.last_at),
  };
}
