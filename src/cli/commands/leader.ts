/** `baton leader`: who leads the dispatcher now (session, host, pid, term), on the database clock. */
import type { Command } from 'commander';
import { iso } from '../output.js';
import { withApi } from '../run.js';

export function registerLeader(program: Command): void {
  program
    .command('leader')
    .description('print the dispatcher leader: session, host, pid and term; or say there is none')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const view = await baton.cluster.leader();
        out.result(view, () => {
          if (!view.current) {
            return view.term === null
              ? 'no dispatcher leader: the lease was never taken'
              : `no dispatcher leader: term ${view.term} ended or expired`;
          }
          return (
            `dispatcher leader: session ${view.session ?? '?'} on ${view.host ?? '?'} ` +
            `(pid ${view.pid ?? '?'}), term ${view.term ?? '?'}, expires ${iso(view.expiresAt ?? 0)}`
          );
        });
      }),
    );
}
