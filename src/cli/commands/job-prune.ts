/**
 * `baton job prune --older-than 30d [--dry-run]`: an operator's job retention (decision 0039), on
 * the database (--db) or over the API with an operator token, as `baton host disable` is.
 */
import type { Command } from 'commander';
import { withApi } from '../run.js';
import { cliActor } from './lifecycle.js';

interface PruneFlags {
  readonly olderThan: string;
  readonly dryRun?: boolean;
  readonly session?: string;
}

export function registerJobPrune(job: Command): void {
  job
    .command('prune')
    .description(
      'remove finished jobs that ended more than --older-than ago, with their output; the newest job ' +
        'of each task stays, and the ledger keeps every job’s rows',
    )
    .requiredOption('--older-than <duration>', 'how long a finished job is kept, e.g. 30d or 12h')
    .option('--dry-run', 'count the jobs that would go; remove none')
    .option('--session <id>', 'the live session you act under, named in the ledger row (not with --api)')
    .action((flags: PruneFlags, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const input = { olderThan: flags.olderThan, dryRun: flags.dryRun === true };
        const report = await baton.cluster.pruneJobs(input, cliActor(flags.session));
        const before =
          report.cutoff === null ? '' : ` that ended before ${new Date(report.cutoff).toISOString()}`;
        out.result(report, () =>
          report.dryRun
            ? `would remove ${report.removed} finished jobs${before} (dry run: nothing removed)`
            : `removed ${report.removed} finished jobs${before}`,
        );
      }),
    );
}
