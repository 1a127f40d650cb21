/** `baton hosts`, `baton host enable|disable <name>` and `baton retry <job>`. */
import type { Command } from 'commander';
import { ramAvailableMb } from '../../core/placement.js';
import { cell, iso, table } from '../output.js';
import { withCoordinator } from '../run.js';

export function registerHosts(program: Command): void {
  program
    .command('hosts')
    .description('list hosts: enabled or standby, RAM, job slots, running jobs and containment')
    .action((_o: unknown, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const hosts = await baton.cluster.hosts();
        out.result(hosts, () =>
          hosts.length === 0
            ? 'no hosts: start one with `baton up`'
            : table(
                [
                  'HOST',
                  'STATE',
                  'RAM_TOTAL',
                  'RESERVED',
                  'FREE',
                  'AVAILABLE',
                  'JOBS',
                  'CONTAINMENT',
                  'HEARTBEAT',
                ],
                hosts.map((h) => [
                  h.name,
                  h.enabled ? 'enabled' : 'standby',
                  `${h.ramTotalMb}`,
                  `${h.ramReservedMb}`,
                  `${h.ramFreeMb}`,
                  `${ramAvailableMb(h)}`,
                  `${h.jobsActive}/${h.slotsMax}`,
                  cell(h.containment),
                  iso(h.heartbeatAt),
                ]),
              ),
        );
      }),
    );

  const host = program.command('host').description('enable a host, or disable it into a warm standby');
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    host
      .command(`${verb} <name>`)
      .description(
        enabled ? 'let the dispatcher place work on the host' : 'stop placing work on it (standby)',
      )
      .action((name: string, _o: unknown, cmd: Command) =>
        withCoordinator(cmd, async (baton, out) => {
          const h = await baton.cluster.setHostEnabled(name, enabled);
          out.result(h, () => `host ${h.name} ${h.enabled ? 'enabled' : 'disabled (standby)'}`);
        }),
      );
  }

  program
    .command('retry <job-id>')
    .description('queue an ended job again as a new job with the same command and RAM budget')
    .action((id: string, _o: unknown, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const { job, created } = await baton.cluster.retryJob(id);
        out.result({ job, created }, () =>
          created
            ? `queued job ${job.id} for ${job.key} (retry of job ${id})`
            : `job ${job.id} for ${job.key} is already ${job.status}`,
        );
      }),
    );
}
