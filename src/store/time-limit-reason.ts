/**
 * The words of a pull-mode job failed past its own time limit (decision 0037), in one home for
 * both engines and both paths (a single finish in JavaScript, a batch member in PostgreSQL's
 * statement): `timed out: ran past its time limit of 1 s (started 2026-…Z); the worker said done`.
 */
import type { Instant } from '../core/time.js';
import type { JobFinishParams } from './store.js';

/** `timed out: ran past its time limit of 1 s (started …)`, the runner's words too. */
export function timedOutWords(startedAt: Instant, limitMs: number): string {
  const started = new Date(startedAt).toISOString();
  return `timed out: ran past its time limit of ${limitMs / 1000} s (started ${started})`;
}

/** How the reason of a job the leader's sweep failed ends (sweptReason), told from a worker's own. */
export const SWEPT_ENDING = '; its worker had not finished it, the leader failed it';

/** The reason of a job the leader's sweep failed: its worker never finished it. */
export function sweptReason(startedAt: Instant, limitMs: number): string {
  return `${timedOutWords(startedAt, limitMs)}${SWEPT_ENDING}`;
}

/** The failed job's reason: the limit's words, then what the worker said (its status, its reason). */
export function timedOutReason(
  startedAt: Instant,
  limitMs: number,
  said: Pick<JobFinishParams, 'status' | 'reason'>,
): string {
  const worker = said.reason ? `${said.status}: ${said.reason}` : said.status;
  return `${timedOutWords(startedAt, limitMs)}; the worker said ${worker}`;
}

/**
 * timedOutReason as a PostgreSQL expression over a job row (`job`: its started_at and
 * time_limit_ms) and the worker's status and reason: the same text (a number of seconds without
 * trailing zeros, the start as toISOString writes it in UTC, to the millisecond).
 */
export function timedOutReasonSql(job: string, status: string, reason: string): string {
  const seconds = `rtrim(rtrim((${job}.time_limit_ms / 1000.0)::text, '0'), '.')`;
  const started = `to_char(${job}.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  return `'timed out: ran past its time limit of ' || ${seconds} || ' s (started ' || ${started}
    || '); the worker said ' || ${status} || coalesce(': ' || nullif(${reason}, ''), '')`;
}
