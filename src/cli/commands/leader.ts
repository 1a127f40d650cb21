/** `baton leader`: who holds the dispatcher lease, judged on the database clock. */
import type { Command } from 'commander';
import { iso } from '../output.js';
import { withCoordinator } from '../run.js';

export function registerLeader(program: Command): void {
  program
    .command('leader')
    .description('print the holder and term of the dispatcher lease, or say there is none')
    .action((_o: unknown, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const view = await baton.leader();
        const { lease } = view;
        out.result(view, () => {
          if (lease === null) return `no ${view.name} leader: the lease was never taken`;
          if (!view.current) return `no ${view.name} leader: term ${lease.term} ended or expired`;
          return `${view.name} leader: ${lease.holder ?? '?'}, term ${lease.term}, ` +
            `expires ${iso(lease.expiresAt)}`;
        });
      }),
    );
}
