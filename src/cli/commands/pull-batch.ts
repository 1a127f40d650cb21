/**
 * Pull mode in batches: `baton job next --batch N` takes up to N due jobs in one commit, each
 * started under its own epoch and a lease; `baton job finish-batch` finishes any number of them in
 * one commit, each under its own epoch (one that moved on, or outlived its lease, fails alone),
 * and with --next takes the next batch in the same commit.
 *
 *   batch=$(baton job next --session "$S" --batch 50 --lease 5m --json)
 *   ... work on each ...
 *   baton job finish-batch --session "$S" 17:1 18:1:failed --next 50 --json
 *
 * A finish-batch whose members all went through exits 0. One whose members moved on exits 3 when
 * it took no job (the others are finished: the JSON says which); with jobs taken it exits 0, since
 * the script now holds them and must not drop them. A member the leader's sweep failed past its own
 * time limit is told with the line `baton job finish` gives it (`message`, `timedOut` in the JSON).
 * Both work over the HTTP API too (POST /v1/jobs/next-batch and /v1/jobs/finish-batch), with the
 * same output and exit codes.
 */
import type { Command } from 'commander';
import type { Pull, PullBatchResult } from '../../coordinator/pull.js';
import { InvalidInputError } from '../../core/errors.js';
import type { Job } from '../../core/job.js';
import { jobLine } from '../job-format.js';
import { Refusal } from '../refusal.js';
import { withApi } from '../run.js';
import type { Output } from '../output.js';

/** `id:epoch` or `id:epoch:status`, as `baton job next --batch` prints them. */
function member(text: string): { id: string; epoch: string; status?: string } {
  const [id, epoch, status, ...rest] = text.split(':');
  if (id === undefined || epoch === undefined || rest.length > 0) {
    throw new InvalidInputError(
      `a batch member must be id:epoch or id:epoch:status, got ${JSON.stringify(text)}`,
      'write each job as printed by `baton job next --batch`, such as 17:1 or 18:1:failed',
    );
  }
  return status === undefined ? { id, epoch } : { id, epoch, status };
}

const takenLines = (result: PullBatchResult, session: string): string[] => {
  if (result.taken.length === 0) return ['no job is due'];
  const until =
    result.leaseUntil === null ? '' : `, leases until ${new Date(result.leaseUntil).toISOString()}`;
  return [
    `took ${result.taken.length} job(s)${until}:`,
    ...result.taken.map(
      (job: Job) => `  ${job.id}:${job.epoch} ${job.key} (attempt ${job.attempt}/${job.attemptMax})`,
    ),
    `finish them with: baton job finish-batch --session ${session} <id:epoch[:status]>... [--next N]`,
  ];
};

/** The `job next --batch` answer. */
export async function nextBatch(
  baton: { readonly pull: Pick<Pull, 'nextBatch'> },
  out: Output,
  options: { session: string; batch: string; lease?: string },
): Promise<void> {
  const input = {
    session: options.session,
    size: options.batch,
    ...(options.lease === undefined ? {} : { lease: options.lease }),
  };
  const result = await baton.pull.nextBatch(input);
  out.result({ jobs: result.taken, leaseUntil: result.leaseUntil }, () =>
    takenLines(result, options.session),
  );
}

interface FinishBatchOptions {
  readonly session: string;
  readonly next?: string;
  readonly lease?: string;
}

/**
 * A batch that took no job and whose members did not all finish: exit 3, one line. A member the
 * leader's sweep failed is told with its time-limit line, the others that moved on by their ids.
 */
function refuseLost(
  answer: PullBatchResult,
  members: readonly string[],
  json: Record<string, unknown>,
): void {
  const swept = answer.finished.flatMap((finished) => ('message' in finished ? [finished.message] : []));
  const moved = answer.finished.flatMap((finished, index) =>
    finished.ok || 'message' in finished ? [] : [members[index] ?? '?'],
  );
  if (swept.length === 0 && moved.length === 0) return;
  const all = answer.finished.length;
  const done = all - swept.length - moved.length;
  if (swept.length === 0) {
    const hint = 'they are no longer yours; take more with `baton job next --batch N`';
    throw new Refusal(
      'conflict',
      'lost',
      `${moved.length} of ${all} jobs moved on (${moved.join(' ')}); ${done} finished`,
      hint,
      json,
    );
  }
  const others = moved.length === 0 ? '' : `; ${moved.length} moved on (${moved.join(' ')})`;
  const hint = '`baton retry <job-id>` queues a timed-out job again with the same limit';
  throw new Refusal(
    'conflict',
    'lost',
    `${swept.join('; ')}${others}; ${done} of ${all} finished`,
    hint,
    json,
  );
}

export function registerPullBatch(job: Command): void {
  job
    .command('finish-batch <members...>')
    .description('finish jobs you took, each as id:epoch[:status], in one commit; --next N takes more')
    .requiredOption('--session <id>', 'the session that took the jobs')
    .option('--next <n>', 'also take up to n due jobs, in the same commit')
    .option('--lease <duration>', 'how long each job taken may be held (default 5m)')
    .action((members: string[], options: FinishBatchOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const finish = members.map(member);
        const input = {
          session: options.session,
          finish,
          take: options.next ?? 0,
          ...(options.lease === undefined ? {} : { lease: options.lease }),
        };
        const answer = await baton.pull.batch(input);
        const json = { finished: answer.finished, jobs: answer.taken, leaseUntil: answer.leaseUntil };
        if (answer.taken.length === 0) refuseLost(answer, members, json);
        out.result(json, () => [
          ...answer.finished.map((result, index) =>
            result.ok
              ? `finished ${jobLine(result.job)}${'timedOut' in result ? ' [timed out]' : ''}`
              : 'message' in result
                ? result.message
                : `job ${members[index] ?? '?'} had moved on: not finished by you`,
          ),
          ...(options.next === undefined ? [] : takenLines(answer, options.session)),
        ]);
      }),
    );
}
