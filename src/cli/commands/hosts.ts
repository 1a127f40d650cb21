/** `baton hosts`, `baton host enable|disable <name>` and `baton retry <job>`. */
import type { Command } from 'commander';
import { diskLow } from '../../core/disk.js';
import { ramAvailableMb } from '../../core/capacity.js';
import { cell, iso, table } from '../output.js';
import { withApi } from '../run.js';
import { cliActor } from './lifecycle.js';

/** Free space of the host's state and log directory, flagged LOW when it runs out. */
function diskCell(freeMb: number | null, totalMb: number | null): string {
  if (freeMb === null || totalMb === null) return cell(null);
  return `${freeMb}${diskLow(freeMb, totalMb) ? ' LOW' : ''}`;
}

const HOST_COLUMNS = [
  'HOST',
  'STATE',
  'RAM_TOTAL',
  'RESERVED',
  'FREE',
  'AVAILABLE',
  'JOBS',
  'CONTAINMENT',
  'DISK_FREE',
  'HEARTBEAT',
];

export function registerHosts(program: Command): void {
  program
    .command('hosts')
    .description('list hosts: enabled or standby, RAM, job slots, running jobs, containment and free disk')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const hosts = await baton.cluster.hosts();
        out.result(hosts, () =>
          hosts.length === 0
            ? 'no hosts: start one with `baton up`'
            : table(
                HOST_COLUMNS,
                hosts.map((host) => [
                  host.name,
                  host.enabled ? 'enabled' : 'standby',
                  `${host.ramTotalMb}`,
                  `${host.ramReservedMb}`,
                  `${host.ramFreeMb}`,
                  `${ramAvailableMb(host)}`,
                  `${host.jobsActive}/${host.slotsMax}`,
                  cell(host.containment),
                  diskCell(host.diskFreeMb, host.diskTotalMb),
                  iso(host.heartbeatAt),
                ]),
              ),
        );
      }),
    );

  registerHostToggle(program);

  program
    .command('retry <job-id>')
    .description('queue an ended job again as a new job with the same command and RAM budget')
    .option('--session <id>', 'the session you act under, recorded in the ledger')
    .action((id: string, options: { session?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const { job, created } = await baton.cluster.retryJob(id, cliActor(options.session));
        out.result({ job, created }, () =>
          created
            ? `queued job ${job.id} for ${job.key} (retry of job ${id})`
            : `job ${job.id} for ${job.key} is already ${job.status}`,
        );
      }),
    );
}

/** `baton host enable|disable <name>`, naming who acted in the ledger. */
function registerHostToggle(program: Command): void {
  const hostCommand = program.command('host').description('enable a host, or disable it into a warm standby');
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    hostCommand
      .command(`${verb} <name>`)
      .description(
        enabled ? 'let the dispatcher place work on the host' : 'stop placing work on it (standby)',
      )
      .option('--session <id>', 'the session you act under, recorded in the ledger')
      .action((name: string, options: { session?: string }, cmd: Command) =>
        withApi(cmd, async (baton, out) => {
          const host = await baton.cluster.setHostEnabled(name, enabled, cliActor(options.session));
          out.result(host, () => `host ${host.name} ${host.enabled ? 'enabled' : 'disabled (standby)'}`);
        }),
      );
  }
}
