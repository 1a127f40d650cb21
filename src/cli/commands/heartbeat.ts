/** `baton heartbeat`: a liveness signal, and with a claim named, proof it is still current. */
import type { Command } from 'commander';
import { Refusal } from '../refusal.js';
import { withApi } from '../run.js';
import { fencedRefusal } from '../../coordinator/refusals.js';

interface HeartbeatOptions {
  readonly key?: string;
  readonly epoch?: string;
}

export function registerHeartbeat(program: Command): void {
  program
    .command('heartbeat <session-id>')
    .description(
      'record that a session is alive and renew its claims; exits 3 once the named claim is fenced off',
    )
    .option('--key <key>', 'also check the claim on this task (needs --epoch)')
    .option('--epoch <n>', 'the epoch of that claim (needs --key)')
    .action((session: string, options: HeartbeatOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const result = await baton.heartbeat({ session, key: options.key, epoch: options.epoch });
        if (!result.ok) {
          if (options.key === undefined || options.epoch === undefined) {
            throw new Refusal(
              'fenced',
              'fenced',
              `session ${session} is no longer live`,
              'start a new session with `baton session start`',
            );
          }
          throw fencedRefusal(options.key, options.epoch, result.current, result.sessionEnded);
        }
        const claim = options.key === undefined ? {} : { key: options.key, epoch: Number(options.epoch) };
        out.result({ ok: true, session: Number(session), ...claim }, () =>
          options.key === undefined
            ? `session ${session} is alive; its claims are renewed`
            : `session ${session} is alive and holds ${options.key} at epoch ${options.epoch}`,
        );
      }),
    );
}
