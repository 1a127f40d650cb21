/**
 * `baton effect` records a side effect under a claim, fenced by its epoch: an agent calls it
 * before (or as) it writes to the task's resource, and stops when told exit 3. `baton effects`
 * lists what was accepted.
 */
import type { Command } from 'commander';
import type { Effect } from '../../core/effect.js';
import { parseJsonText } from '../../coordinator/effects.js';
import { iso } from '../output.js';
import { withApi } from '../run.js';
import { fencedRefusal } from '../../coordinator/refusals.js';
import { claimFromRun, needed } from '../run-claim.js';

interface EffectOptions {
  readonly session?: string;
  readonly epoch?: string;
  readonly kind: string;
  readonly payload?: string;
}

export function registerEffect(program: Command): void {
  program
    .command('effect')
    .argument('[key]', "the claim's task (default $BATON_KEY)")
    .description('record a side effect under a claim; exits 3 when the claim is no longer current (fenced)')
    .option('--session <id>', 'the session holding the claim (default $BATON_SESSION)')
    .option('--epoch <n>', "the claim epoch (default $BATON_EPOCH, for the run's own claim only)")
    .requiredOption('--kind <kind>', 'what was done, such as file-write or pr-comment')
    .option('--payload <json>', 'a JSON value describing it (default {})')
    .action((given: string | undefined, options: EffectOptions, cmd: Command) => {
      const named = claimFromRun({ ...options, key: given }, process.env);
      const key = needed(named, 'key', 'effect');
      const session = needed(named, 'session', 'effect');
      const epoch = needed(named, 'epoch', 'effect');
      return withApi(cmd, async (baton, out) => {
        const { kind } = options;
        const payload =
          options.payload === undefined ? undefined : parseJsonText('--payload', options.payload);
        const input = { key, session, epoch, kind, payload };
        const result = await baton.effects.record(input);
        if (!result.ok) throw fencedRefusal(key, epoch, result.current, result.sessionEnded, Number(session));
        const { effect } = result;
        out.result(
          effect,
          () => `recorded effect ${effect.id} on ${effect.key} (${effect.kind}, epoch ${effect.epoch})`,
        );
      });
    });

  program
    .command('effects <key>')
    .description('list the side effects accepted on a task, oldest first')
    .option('--after <id>', 'only effects with a larger id')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .action((key: string, options: { after?: string; limit?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const effects = await baton.effects.list({ key, after: options.after, limit: options.limit });
        out.result(effects, () => (effects.length === 0 ? ['no effects'] : effects.map(effectLine)));
      }),
    );
}

function effectLine(effect: Effect): string {
  const { id, recordedAt, kind, session, epoch } = effect;
  const payload = JSON.stringify(effect.payload);
  return `#${id}  ${iso(recordedAt)}  ${kind}  session ${session}  epoch ${epoch}  ${payload}`;
}
