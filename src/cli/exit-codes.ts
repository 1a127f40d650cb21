/**
 * Exit codes, one table from ErrorCode. Scripts branch on these: 3 means "someone else has it or
 * you were fenced off, stop", which differs from 4 "no such thing" and 5 "try again later".
 * Adding an ErrorCode without a row here fails the compile.
 */
import type { ErrorCode } from '../core/errors.js';

export const EXIT_OK = 0;
export const EXIT_UNEXPECTED = 1;
export const EXIT_USAGE = 2;
export const EXIT_NOT_FOUND = 4;
export const EXIT_UNREACHABLE = 5;
/** `baton doctor`: a check failed (an unreachable database keeps its 5). */
export const EXIT_CHECK_FAILED = 7;
/**
 * A long-running command (`baton up`, `baton serve`, `baton github sync --every`) stopped because
 * the reader of its stdout went away: it stopped as SIGTERM stops it, which is no clean stop
 * (docs/decisions/0057). Not 0, so that a supervisor sees it; not 141, as nothing killed it.
 */
export const EXIT_OUTPUT_CLOSED = 8;

/**
 * Thrown by a command that has printed its answer and only needs this exit code: `next` (4),
 * `audit verify` and `audit commits` (1), or
 * `baton hook`, which speaks Claude Code's protocol (its exit 2 means "block this tool call").
 */
export class Exit extends Error {
  override readonly name = 'Exit';
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export const EXIT_CODE_BY_ERROR = {
  invalid_input: 2,
  workspace_unresolved: 2,
  conflict: 3,
  fenced: 3,
  task_open: 3,
  task_in_review: 3,
  task_done: 3,
  task_closed: 3,
  task_escalated: 3,
  not_found: 4,
  store_unavailable: 5,
  github_unavailable: 5,
  forbidden: 6,
} as const satisfies Record<ErrorCode, number>;

const MEANING: Readonly<Record<number, string>> = {
  0: 'success',
  1: 'anything unexpected (BATON_DEBUG=1 prints the stack)',
  2: 'bad usage or bad input',
  3: "conflict: held by another session, lost the race, fenced off, or the task's state refuses it",
  4: 'not found',
  5: 'database (or GitHub) unreachable',
  6:
    'not allowed: over the HTTP API, no token, a bad one, or one whose scope does not cover this; ' +
    'db copy: the role may not create tables in the target schema',
  7: 'baton doctor: a check failed (each FAIL line says how to fix it)',
  8: 'up, serve, github sync --every: stopped as on SIGTERM because the reader of its output went away',
};

/** The exit code table for --help, built from the mapping so the two never disagree. */
export function exitCodeHelp(): string {
  const lines = Object.entries(MEANING).map(([exit, meaning]) => {
    const codes = Object.entries(EXIT_CODE_BY_ERROR)
      .filter(([, mapped]) => mapped === Number(exit))
      .map(([code]) => code);
    return `  ${exit}  ${meaning}${codes.length > 0 ? ` (${codes.join(', ')})` : ''}`;
  });
  return ['Exit codes:', ...lines].join('\n');
}
