/**
 * `baton next`: give me the next task. Claims the most urgent eligible task (open, behind no
 * gate, no active job, no live claim) for the caller in one step and prints its key, title and
 * epoch; when none is eligible, prints `null` (or says why) and exits 4.
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { EXIT_NOT_FOUND, Exit } from '../exit-codes.js';
import { writeErrorLine, writeJson } from '../output.js';
import { withApi } from '../run.js';
import { noEligibleRefusal } from '../../coordinator/refusals.js';

interface NextOptions {
  readonly session?: string;
  readonly kind?: string;
  readonly ttl?: string;
  readonly label?: string;
  readonly project?: string;
}

export function registerNext(program: Command): void {
  program
    .command('next')
    .description('claim the next eligible task (by priority, then age); exits 4 when there is none')
    .option('--session <id>', 'your session; left out, a new one is started (see --kind, --ttl)')
    .option('--kind <kind>', 'kind of the session started when --session is left out (default human)')
    .option('--ttl <duration>', 'TTL of that session, such as 8h (default: 8h for a human)')
    .option('--label <name>', 'only tasks with this label')
    .option('--project <name>', 'only tasks of this project')
    .action((options: NextOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const outcome = await baton.lifecycle.next({ ...options, host: hostname(), pid: process.ppid });
        if (!outcome.ok) {
          const refusal = noEligibleRefusal(outcome.gated);
          if (out.json) writeJson(null);
          else writeErrorLine(refusal.message, refusal.hint);
          throw new Exit(EXIT_NOT_FOUND);
        }
        const { task, claim } = outcome;
        const session = outcome.session === null ? {} : { session: outcome.session.id };
        const url = task.url === null ? {} : { url: task.url };
        out.result({ key: task.key, title: task.title, epoch: claim.epoch, ...url, ...session }, () => [
          `${task.key}  ${task.title}`,
          `  claimed at epoch ${claim.epoch} by session ${claim.session}${task.url === null ? '' : `  ${task.url}`}`,
        ]);
      }),
    );
}
