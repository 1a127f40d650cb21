/**
 * `baton force-release <key> --reason R`: an operator ends a claim whoever holds it. The holder
 * is fenced, its run cancelled (the runner kills the agent's tree within a heartbeat), and the
 * ledger keeps who, why and the fenced epoch. No live claim is exit 4 and changes nothing.
 */
import type { Command } from 'commander';
import { describeHolder } from '../output.js';
import { noClaimRefusal } from '../../coordinator/refusals.js';
import { withApi } from '../run.js';
import { cliActor } from './lifecycle.js';

export function registerForceRelease(program: Command): void {
  program
    .command('force-release <key>')
    .description("end a task's live claim whoever holds it: fences the holder, cancels its run")
    .requiredOption('--reason <text>', 'why, kept in the ledger')
    .action((key: string, options: { reason: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const released = await baton.forceRelease({ key, reason: options.reason, by: cliActor() });
        if (!released.ok) throw noClaimRefusal(key);
        const result = {
          key,
          epoch: released.holder.epoch,
          holder: released.holder,
          job: released.job,
          reason: options.reason,
        };
        out.result(result, () => {
          const job = released.job === null ? '' : `; job ${released.job.id} (${released.job.was}) cancelled`;
          return `force-released ${key} from ${describeHolder(released.holder)}${job}`;
        });
      }),
    );
}
