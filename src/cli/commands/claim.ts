/**
 * `baton claim` and `baton release`. A claim held by another session and a release with a stale
 * epoch are expected outcomes for the store; here they become exit 3 with the current holder.
 */
import type { Command } from 'commander';
import { fencedRefusal, heldRefusal } from '../../coordinator/refusals.js';
import { withApi } from '../run.js';

export function registerClaim(program: Command): void {
  program
    .command('claim <key>')
    .description('claim a task for a session; exits 3 with the holder when another session has it')
    .requiredOption('--session <id>', 'the claiming session (from `baton session start`)')
    .action((key: string, options: { session: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const result = await baton.claim({ key, session: options.session });
        if (!result.ok) throw heldRefusal(key, result.holder);
        const { claim, granted } = result;
        out.result({ ...claim, granted }, () => {
          const again = granted ? '' : ', already held';
          return `claimed ${claim.key} epoch ${claim.epoch} (session ${claim.session}${again})`;
        });
      }),
    );

  program
    .command('release <key>')
    .description('release a claim; exits 3 when the epoch is no longer current (fenced)')
    .requiredOption('--session <id>', 'the session holding the claim')
    .requiredOption('--epoch <n>', 'the epoch printed by `baton claim`')
    .option('--outcome <outcome>', 'done, failed or released (default released)')
    .action((key: string, options: { session: string; epoch: string; outcome?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const input = { key, session: options.session, epoch: options.epoch, outcome: options.outcome };
        const result = await baton.release(input);
        if (!result.ok) throw fencedRefusal(key, options.epoch, result.current, result.sessionEnded);
        const outcome = options.outcome ?? 'released';
        out.result(
          { key, session: Number(options.session), epoch: Number(options.epoch), outcome },
          () => `released ${key} epoch ${options.epoch} (${outcome})`,
        );
      }),
    );
}
