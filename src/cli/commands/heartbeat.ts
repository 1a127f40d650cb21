/** `baton heartbeat`: a liveness signal, and with a claim named, proof it is still current. */
import type { Command } from 'commander';
import { Refusal } from '../refusal.js';
import { withApi } from '../run.js';
import { fencedRefusal } from '../../coordinator/refusals.js';
import { claimFromRun, needed } from '../run-claim.js';

interface HeartbeatOptions {
  readonly key?: string;
  readonly epoch?: string;
}

export function registerHeartbeat(program: Command): void {
  program
    .command('heartbeat')
    .argument('[session-id]', "the session (default $BATON_SESSION, and then the run's own claim is checked)")
    .description(
      'record that a session is alive and renew its claims; exits 3 once the named claim is fenced off',
    )
    .option('--key <key>', 'also check the claim on this task (needs --epoch; default $BATON_KEY)')
    .option(
      '--epoch <n>',
      "the epoch of that claim (needs --key; default $BATON_EPOCH, for the run's own claim)",
    )
    .action((given: string | undefined, options: HeartbeatOptions, cmd: Command) => {
      // Inside a run, a bare `baton heartbeat` checks the run's claim, not just the session: an agent
      // asks to learn whether to stop. A session named explicitly beats alone unless a claim is named.
      const claimed = given === undefined || options.key !== undefined || options.epoch !== undefined;
      const named = claimFromRun({ ...options, session: given }, process.env, claimed);
      const session = needed(named, 'session', 'heartbeat');
      const { key, epoch } = named;
      return withApi(cmd, async (baton, out) => {
        const result = await baton.heartbeat({ session, key, epoch });
        if (!result.ok) {
          if (key === undefined || epoch === undefined) {
            throw new Refusal(
              'fenced',
              'fenced',
              `session ${session} is no longer live`,
              'start a new session with `baton session start`',
            );
          }
          throw fencedRefusal(key, epoch, result.current, result.sessionEnded, Number(session));
        }
        const claim = key === undefined ? {} : { key, epoch: Number(epoch) };
        out.result({ ok: true, session: Number(session), ...claim }, () =>
          key === undefined
            ? `session ${session} is alive; its claims are renewed`
            : `session ${session} is alive and holds ${key} at epoch ${epoch}`,
        );
      });
    });
}
