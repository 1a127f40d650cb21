/**
 * `baton up`'s flags that end a run going nowhere (a stall, run-progress.ts) or going on too long
 * (its time limit, run-limit.ts), and what they parse to.
 */
import type { Command } from 'commander';
import { TIME_LIMIT_MAX_MS, TIME_LIMIT_MIN_MS } from '../../core/job.js';
import { STALL_ACTION_DEFAULT, STALL_ACTIONS, STALL_AFTER_MS_DEFAULT } from '../../core/progress.js';
import { validateDuration, validateOneOf } from '../../core/validate.js';
import type { UpOptions } from '../../daemon/up.js';

export interface RunWatchFlags {
  readonly stallAfter?: string;
  readonly stallAction?: string;
  readonly timeLimit?: string;
}

/** The stall policy and the runner's time limit (none unless given); a bad value: InvalidInputError. */
export function runWatchOptions(flags: RunWatchFlags): Pick<UpOptions, 'stall' | 'timeLimitMs'> {
  return {
    stall: {
      stallAfterMs:
        flags.stallAfter === undefined
          ? STALL_AFTER_MS_DEFAULT
          : validateDuration('--stall-after', flags.stallAfter, 1, 7 * 24 * 3600 * 1000),
      action:
        flags.stallAction === undefined
          ? STALL_ACTION_DEFAULT
          : validateOneOf('--stall-action', flags.stallAction, STALL_ACTIONS),
    },
    timeLimitMs:
      flags.timeLimit === undefined
        ? null
        : validateDuration('--time-limit', flags.timeLimit, TIME_LIMIT_MIN_MS, TIME_LIMIT_MAX_MS),
  };
}

export function runWatchFlags(command: Command): Command {
  return command
    .option(
      '--stall-after <duration>',
      'a running job with no progress for this long is stalled (default 900)',
    )
    .option(
      '--stall-action <action>',
      'what to do with a stalled job: escalate (hand its task to a human; default), kill (fail it) or none (report)',
    )
    .option(
      '--time-limit <duration>',
      "a run longer than this (1s to 7d: 2h, 90m) is killed and fails 'timed out', for jobs " +
        'queued without their own `baton enqueue --time-limit` (default: none)',
    );
}
