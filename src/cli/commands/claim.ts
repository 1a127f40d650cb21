/**
 * `baton claim` and `baton release`. A claim held by another session and a release with a stale
 * epoch are expected outcomes for the store; here they become exit 3 with the current holder.
 */
import type { Command } from 'commander';
import { fencedRefusal, heldRefusal } from '../../coordinator/refusals.js';
import { withApi } from '../run.js';
import { validateEpoch, validateId, validateKey } from '../../core/validate.js';

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
    .option(
      '--outcome <outcome>',
      "done, failed or released (default released); inside a run, done of the run's own claim releases " +
        'nothing: the runner records it done when the agent exits 0',
    )
    .action((key: string, options: { session: string; epoch: string; outcome?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        if (options.outcome === 'done' && isRunsOwnClaim(key, options, process.env)) {
          const beat = await baton.heartbeat({ session: options.session, key, epoch: options.epoch });
          if (!beat.ok) throw fencedRefusal(key, options.epoch, beat.current, beat.sessionEnded);
          out.result(
            {
              key,
              session: Number(options.session),
              epoch: Number(options.epoch),
              outcome: 'done',
              released: false,
            },
            () =>
              `nothing released: baton up's runner holds ${key} for this run and records it done when your ` +
              'command exits with status 0; exit now',
          );
          return;
        }
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

/**
 * Whether the claim named is the one a runner made for the agent running this command (BATON_SESSION,
 * BATON_KEY and BATON_EPOCH, decision 0051). The runner finishes that job, and so the task, by the
 * agent's exit: released done from inside, the task would be done while its job runs, so the job would
 * end cancelled and the agent be killed. So a `done` there only checks the claim and says to exit;
 * failed and released go through (the runner, fenced, stops the run and gives the job back).
 */
function isRunsOwnClaim(
  key: string,
  given: { session: string; epoch: string },
  env: NodeJS.ProcessEnv,
): boolean {
  const run = claimOf(env['BATON_KEY'], env['BATON_SESSION'], env['BATON_EPOCH']);
  const named = claimOf(key, given.session, given.epoch);
  return (
    run !== null &&
    named !== null &&
    run.key === named.key &&
    run.session === named.session &&
    run.epoch === named.epoch
  );
}

/** A claim's three parts as the store reads them (`01` is epoch 1), or null when one is not valid. */
function claimOf(key: unknown, session: unknown, epoch: unknown) {
  try {
    return { key: validateKey(key), session: validateId('session', session), epoch: validateEpoch(epoch) };
  } catch {
    return null;
  }
}
