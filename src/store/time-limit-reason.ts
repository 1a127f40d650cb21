/**
 * The words of a pull-mode job failed past its own time limit (decision 0037), in one home for
 * both engines: `timed out: ran past its time limit of 1 s (started 2026-…Z); the worker said done`.
 */
import type { Instant } from '../core/time.js';
import type { JobFinishParams } from './store.js';

/** `timed out: ran past its time limit of 1 s (started …)`, the runner's words too. */
export function timedOutWords(startedAt: Instant, limitMs: number): string {
  const started = new Date(startedAt).toISOString();
  return `timed out: ran past its time limit of ${limitMs / 1000} s (started ${started})`;
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
