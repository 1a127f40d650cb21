/**
 * Progress is apart from liveness. A heartbeat says a session's process is alive; a progress
 * mark says it got somewhere: it printed output, changed files in its worktree, made a commit,
 * recorded an effect or called a tool. A running job whose agent session made no mark for the
 * stall threshold is `stalled` (an agent looping on a failing command heartbeats for ever, but
 * stops making marks); its next mark clears the stall.
 *
 * One progress record per session: an agent session runs one attempt of one job, so a retried
 * job starts from a clean record.
 */
import { InvalidInputError } from './errors.js';
import type { SessionId } from './session.js';
import type { Instant } from './time.js';

/** The counters a mark adds to, in the order they are shown. */
export const PROGRESS_COUNTERS = ['outputBytes', 'filesChanged', 'commits', 'effects', 'toolCalls'] as const;
export type ProgressCounter = (typeof PROGRESS_COUNTERS)[number];
export type ProgressCounts = Readonly<Record<ProgressCounter, number>>;

export interface Progress extends ProgressCounts {
  readonly session: SessionId;
  /** The last mark, or null when the record exists only because the session was marked stalled. */
  readonly lastAt: Instant | null;
  /** What the last mark was, in a few words: `tool Edit`, `3 files changed`, `commit 1a2b3c4`. */
  readonly note: string | null;
  /** Set when a job of this session was marked stalled; cleared by the next mark. */
  readonly stalledAt: Instant | null;
}

/** What one mark adds; a mark must add something. */
export type ProgressMark = Partial<ProgressCounts> & { readonly note?: string | null | undefined };

/**
 * What a stall leads to: `escalate` hands the task to a human (the claim and its job end
 * `escalated`, the run is killed), `kill` fails the job with reason `stalled`, `none` only reports.
 */
export type StallAction = 'escalate' | 'kill' | 'none';
export const STALL_ACTIONS: readonly StallAction[] = ['escalate', 'kill', 'none'];
export const STALL_ACTION_DEFAULT: StallAction = 'escalate';
/** 15 minutes without a mark, by default. */
export const STALL_AFTER_MS_DEFAULT = 15 * 60_000;

const PROGRESS_NOTE_LENGTH_MAX = 200;
const COUNT_MAX = 1_000_000_000_000;

/** The mark with every counter present and checked; InvalidInputError when it adds nothing. */
export function validateProgressMark(mark: ProgressMark): ProgressCounts & { readonly note: string | null } {
  const counts = {} as Record<ProgressCounter, number>;
  let total = 0;
  for (const name of PROGRESS_COUNTERS) {
    const value = mark[name] ?? 0;
    if (!Number.isSafeInteger(value) || value < 0 || value > COUNT_MAX) {
      throw new InvalidInputError(
        `progress ${name} must be a whole number from 0 to ${COUNT_MAX}, got ${JSON.stringify(value)}`,
        'count what happened since the last mark',
      );
    }
    counts[name] = value;
    total += value;
  }
  if (total === 0) {
    throw new InvalidInputError(
      'a progress mark must count something',
      `give one of ${PROGRESS_COUNTERS.join(', ')}`,
    );
  }
  const note =
    mark.note === undefined || mark.note === null ? null : mark.note.slice(0, PROGRESS_NOTE_LENGTH_MAX);
  return { ...counts, note };
}

/** The last sign of progress of a run: its last mark, or its start when it made none. */
export function lastProgressAt(startedAt: Instant, progress: Pick<Progress, 'lastAt'> | null): Instant {
  const last = progress?.lastAt ?? null;
  return last === null ? startedAt : Math.max(startedAt, last);
}

/** The counters in words, skipping zeros: `1200 output bytes, 3 tool calls`; '' when all are zero. */
export function describeProgress(counts: ProgressCounts): string {
  const words: Record<ProgressCounter, string> = {
    outputBytes: 'output bytes',
    filesChanged: 'files changed',
    commits: 'commits',
    effects: 'effects',
    toolCalls: 'tool calls',
  };
  const parts = PROGRESS_COUNTERS.filter((counter) => counts[counter] > 0).map(
    (counter) => `${counts[counter]} ${words[counter]}`,
  );
  return parts.join(', ');
}
