/**
 * `baton claim` and `baton release`. A claim held by another session and a release with a stale
 * epoch are expected outcomes for the store; here they become exit 3 with the current holder.
 */
import type { Command } from 'commander';
import { fencedRefusal, heldRefusal, keptForRunnerLine } from '../../coordinator/refusals.js';
import { withApi } from '../run.js';
import type { CliApi } from '../remote-api.js';
import type { Output } from '../output.js';
import { claimFromRun, isRunsOwnClaim, needed } from '../run-claim.js';

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
    .command('release')
    .argument('[key]', "the claim's task (default $BATON_KEY)")
    .description('release a claim; exits 3 when the epoch is no longer current (fenced)')
    .option('--session <id>', 'the session holding the claim (default $BATON_SESSION)')
    .option(
      '--epoch <n>',
      "the epoch printed by `baton claim` (default $BATON_EPOCH, for the run's own claim only)",
    )
    .option(
      '--outcome <outcome>',
      "done, failed or released (default released); inside a run, done of the run's own claim releases " +
        'nothing: the runner records it done when the agent exits 0',
    )
    .action((given: string | undefined, options: ReleaseOptions, cmd: Command) => {
      const named = claimFromRun({ ...options, key: given }, process.env);
      const claim = {
        key: needed(named, 'key', 'release'),
        session: needed(named, 'session', 'release'),
        epoch: needed(named, 'epoch', 'release'),
      };
      return withApi(cmd, (baton, out) => release(baton, out, claim, options.outcome));
    });
}

interface ReleaseOptions {
  readonly session?: string;
  readonly epoch?: string;
  readonly outcome?: string;
}

type Named = { readonly key: string; readonly session: string; readonly epoch: string };

async function release(baton: CliApi, out: Output, claim: Named, outcome = 'released'): Promise<void> {
  const { key, session, epoch } = claim;
  if (outcome === 'done' && isRunsOwnClaim(key, claim, process.env)) {
    const beat = await baton.heartbeat({ session, key, epoch });
    if (!beat.ok) throw fencedRefusal(key, epoch, beat.current, beat.sessionEnded, Number(session));
    leftToRunner(out, claim);
    return;
  }
  const result = await baton.release({ key, session, epoch, outcome });
  if (!result.ok) throw fencedRefusal(key, epoch, result.current, result.sessionEnded, Number(session));
  // A run's token released done over HTTP: the server kept the claim for the runner (http/claims.ts).
  if ('released' in result && result.released === false) {
    leftToRunner(out, claim);
    return;
  }
  out.result(
    { key, session: Number(session), epoch: Number(epoch), outcome },
    () => `released ${key} epoch ${epoch} (${outcome})`,
  );
}

function leftToRunner(out: Output, claim: Named): void {
  const { key } = claim;
  out.result(
    { key, session: Number(claim.session), epoch: Number(claim.epoch), outcome: 'done', released: false },
    () => keptForRunnerLine(key),
  );
}
