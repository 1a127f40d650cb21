/**
 * `baton job next` and `baton job finish`: pull mode, for a script that works the queue itself.
 *
 *   job=$(baton job next --session "$S" --json)           # null when no job is due
 *   job=$(baton job next --session "$S" --wait 2m --json) # or wait up to 2 minutes for one
 *   ... work on it ...
 *   baton job finish "$id" --session "$S" --epoch "$epoch" --next --json   # done, and the next one
 *
 * A finish that lost its job (recovered, cancelled: it moved on) exits 3 and changes nothing. With
 * --next the next job is claimed in the same commit even then, so the answer is the next job and
 * the exit is 0 whenever one was taken: the script now holds it and must not drop it. `finished`
 * in the JSON says what became of the previous one. Batches: pull-batch.ts.
 */
import type { Command } from 'commander';
import type { Job, JobTransitionResult } from '../../core/job.js';
import { jobLine } from '../job-format.js';
import { InvalidInputError } from '../../core/errors.js';
import { Refusal } from '../refusal.js';
import { withApi } from '../run.js';
import { nextBatch, registerPullBatch } from './pull-batch.js';

interface FinishOptions {
  readonly session: string;
  readonly epoch: string;
  readonly status?: string;
  readonly exitCode?: string;
  readonly reason?: string;
  readonly next?: boolean;
}

/** How to finish a job just taken, as a command line. */
const finishHint = (job: Job, session: string): string =>
  `finish it with: baton job finish ${job.id} --session ${session} --epoch ${job.epoch} [--next]`;

const taken = (job: Job, session: string): string[] => [
  `took job ${job.id} ${job.key} (epoch ${job.epoch}, attempt ${job.attempt}/${job.attemptMax})`,
  finishHint(job, session),
];

const finishedJson = (result: JobTransitionResult) =>
  result.ok ? { ok: true, job: result.job } : { ok: false, reason: result.reason, job: result.job };

export function registerPull(job: Command): void {
  registerPullBatch(job);
  job
    .command('next')
    .description('take the next due job for your session: claimed and started in one step (null when none)')
    .requiredOption('--session <id>', 'your session (from `baton session start`)')
    .option('--batch <n>', 'take up to n jobs in one commit, each under its own epoch and lease')
    .option('--lease <duration>', 'with --batch: how long each job may be held (default 5m)')
    .option(
      '--wait <duration>',
      'when none is due, wait up to this long (at most 5m) for one: the next enqueue hands its job to you',
    )
    .action((options: { session: string; batch?: string; lease?: string; wait?: string }, cmd: Command) =>
      options.batch !== undefined
        ? withApi(cmd, (baton, out) => {
            if (options.wait !== undefined) {
              throw new InvalidInputError('--wait takes one job at a time', 'leave out --batch or --wait');
            }
            return nextBatch(baton, out, { ...options, batch: options.batch ?? '' });
          })
        : withApi(cmd, async (baton, out) => {
            if (options.lease !== undefined) {
              // Without --batch the job taken has no lease to set: refused, not silently dropped.
              throw new InvalidInputError(
                '--lease is how long each job a --batch takes may be held, and no --batch was given',
                'add --batch <n>, or leave --lease out',
              );
            }
            const next = await baton.pull.next(options.session, options.wait);
            const none = options.wait === undefined ? 'no job is due' : `no job came within ${options.wait}`;
            out.result(next, () => (next === null ? [none] : taken(next, options.session)));
          }),
    );

  job
    .command('finish <id>')
    .description('finish a job you took; --next takes the next one in the same commit')
    .requiredOption('--session <id>', 'the session that took the job')
    .requiredOption('--epoch <n>', 'the epoch printed by `baton job next`')
    .option('--status <status>', 'done, failed or cancelled (default: done, failed if --exit-code is not 0)')
    .option('--exit-code <n>', 'the exit code of the work, 0 to 255')
    .option('--reason <text>', 'why, for a failed or cancelled job')
    .option('--next', 'also take the next due job, in the same commit')
    .action((id: string, options: FinishOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const { session, epoch, status, exitCode, reason } = options;
        const input = { id, session, epoch, status, exitCode, reason };
        const { finished, next } = await baton.pull.finish(input, options.next === true);
        if (!finished.ok && next === null) {
          const was = finished.job;
          const now = was === null ? 'gone' : `${was.status} at epoch ${was.epoch}`;
          const details = { finished: finishedJson(finished), next: null };
          const hint = 'it is no longer yours; take another with `baton job next`';
          throw new Refusal('conflict', 'lost', `job ${id} moved on: it is ${now}`, hint, details);
        }
        out.result({ finished: finishedJson(finished), next }, () => [
          finished.ok
            ? `finished ${jobLine(finished.job)}`
            : `job ${id} had moved on (${finished.job?.status ?? 'gone'}): not finished by you`,
          ...(next === null
            ? options.next === true
              ? ['no job is due']
              : []
            : taken(next, options.session)),
        ]);
      }),
    );
}
