/** `baton hosts`, `baton host enable|disable <name>` and `baton retry <job>`. */
import type { Command } from 'commander';
import { diskLow } from '../../core/disk.js';
import { ramAvailableMb } from '../../core/capacity.js';
import { age, hostFlag } from '../../core/host-liveness.js';
import { shellWord } from '../../core/text.js';
import { durationWords } from '../../core/time.js';
import type { JudgedHost } from '../../coordinator/cluster.js';
import { cell, iso, table } from '../output.js';
import type { CliApi } from '../remote-api.js';
import { withApi } from '../run.js';
import { cliActor } from './lifecycle.js';

/** Free space of the host's state and log directory, flagged LOW when it runs out. */
function diskCell(freeMb: number | null, totalMb: number | null): string {
  if (freeMb === null || totalMb === null) return cell(null);
  return `${freeMb}${diskLow(freeMb, totalMb) ? ' LOW' : ''}`;
}

/** The runner's default time limit (`baton up --time-limit`), `-` for none or from an older server. */
function limitCell(limitMs: number | null | undefined): string {
  return limitMs === undefined || limitMs === null ? '-' : durationWords(limitMs);
}

/**
 * Whether the host's runner runs jobs enqueued without --command (its `baton up` has an
 * --agent-command; decision 0047): `yes` or `no`; `?` for a host no register of this build wrote
 * (taken as able, as placement takes it) or an older server that does not send the flag.
 */
function agentCommandCell(agentCommand: boolean | null | undefined): string {
  if (agentCommand === undefined || agentCommand === null) return '?';
  return agentCommand ? 'yes' : 'no';
}

/**
 * RAM_BUDGET is what the host offers jobs in all (`--ram-mb`, else the machine's total) and
 * MACHINE_FREE what the kernel says is free, which may be more than a budget set lower; AVAILABLE
 * is what placement uses, the lesser of the two after the reserve and what is promised. TIME_LIMIT
 * is the runner's default, which holds every job there without a limit of its own. AGENT_CMD says
 * whether a job without a command of its own can run there.
 */
const HOST_COLUMNS = [
  'HOST',
  'STATE',
  'RAM_BUDGET',
  'RESERVED',
  'MACHINE_FREE',
  'AVAILABLE',
  'JOBS',
  'CONTAINMENT',
  'TIME_LIMIT',
  'AGENT_CMD',
  'DISK_FREE',
  'LAST_REPORT',
];

/**
 * A host as an API server answers it: one from before host liveness sends neither `liveness` nor
 * `lastReportAgeMs`, only the host's last report (`heartbeatAt`).
 */
type HostShown = Omit<JudgedHost, 'liveness' | 'lastReportAgeMs'> &
  Partial<Pick<JudgedHost, 'liveness' | 'lastReportAgeMs'>>;

/**
 * The hosts, each judged against its runner session's TTL on the database's clock, by the
 * coordinator here or the API's server (core/host-liveness.ts): never on this machine's clock.
 */
export function hostsShown(baton: CliApi): Promise<readonly HostShown[]> {
  return baton.cluster.hosts();
}

function reportCell(host: HostShown): string {
  // Not judged by an older server: its raw last report, and `?` for whether it still serves.
  if (host.liveness === undefined || host.lastReportAgeMs === undefined) return `${iso(host.heartbeatAt)}, ?`;
  const ago = `${age(host.lastReportAgeMs)} ago`;
  return host.liveness === 'live' ? ago : `${ago}, ${host.liveness.toUpperCase()}`;
}

/** What an operator should know and do about each host whose `baton up` no longer serves it. */
export function hostNotes(hosts: readonly HostShown[]): string[] {
  const unjudged = hosts.some((host) => host.liveness === undefined || host.lastReportAgeMs === undefined);
  const old = unjudged
    ? ['the API server predates host liveness: LAST_REPORT is its raw last report time, `?` not judged']
    : [];
  const judged = hosts.flatMap((host) =>
    host.liveness === undefined || host.lastReportAgeMs === undefined
      ? []
      : [{ ...host, liveness: host.liveness, lastReportAgeMs: host.lastReportAgeMs }],
  );
  return [...old, ...judgedNotes(judged)];
}

function judgedNotes(hosts: readonly JudgedHost[]): string[] {
  return hosts
    .filter((host) => host.liveness !== 'live')
    .map((host) => {
      const jobs =
        host.jobsActive === 0
          ? ''
          : `; its ${host.jobsActive} job(s) are requeued once a \`baton up\` leads and rescues it`;
      const what =
        host.liveness === 'silent'
          ? `has not reported for ${age(host.lastReportAgeMs)}: its \`baton up\` is dead or paused${jobs}`
          : `is down: its \`baton up\` stopped or was rescued`;
      const start = `baton up --host ${shellWord(host.name)}`;
      const retire =
        host.liveness === 'down' ? `, or \`baton host retire ${shellWord(host.name)}\` if it is gone` : '';
      return `host ${host.name} ${what} — start \`${start}\` on that machine to serve it again${retire}`;
    });
}

export function registerHosts(program: Command): void {
  program
    .command('hosts')
    .description('list hosts: enabled or standby, RAM, job slots, running jobs, containment and free disk')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const hosts = await hostsShown(baton);
        // AVAILABLE, what placement uses, in --json too: a script need not redo its sum.
        const shown = hosts.map((host) => ({ ...host, ramAvailableMb: ramAvailableMb(host) }));
        out.result(shown, () =>
          hosts.length === 0
            ? 'no hosts: start one with `baton up`'
            : [
                ...table(
                  HOST_COLUMNS,
                  hosts.map((host) => [
                    host.name,
                    hostFlag(host),
                    `${host.ramTotalMb}`,
                    `${host.ramReservedMb}`,
                    `${host.ramFreeMb}`,
                    `${ramAvailableMb(host)}`,
                    `${host.jobsActive}/${host.slotsMax}`,
                    cell(host.containment),
                    limitCell(host.timeLimitMs),
                    agentCommandCell(host.agentCommand),
                    diskCell(host.diskFreeMb, host.diskTotalMb),
                    reportCell(host),
                  ]),
                ),
                ...hostNotes(hosts),
              ],
        );
      }),
    );

  registerHostToggle(program);

  program
    .command('retry <job-id>')
    .description('queue an ended job again as a new job with the same command and RAM budget')
    .option('--ram-mb <mb>', "the new job's RAM budget in MB instead (0: none), e.g. after oom_killed")
    .option('--session <id>', 'the session you act under, recorded in the ledger')
    .action((id: string, options: { session?: string; ramMb?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const { ramMb } = options;
        const { job, created } = await baton.cluster.retryJob(id, cliActor(options.session), { ramMb });
        const budget = job.ramMb === null ? 'no RAM budget' : `RAM budget ${job.ramMb} MB`;
        const instead = `baton cancel ${job.id}, then baton retry ${job.id} --ram-mb ${ramMb}`;
        const unchanged = ramMb === undefined ? '' : ` with ${budget}; --ram-mb not applied: ${instead}`;
        out.result({ job, created }, () =>
          created
            ? `queued job ${job.id} for ${job.key} (retry of job ${id}, ${budget})`
            : `job ${job.id} for ${job.key} is already ${job.status}${unchanged}`,
        );
      }),
    );
}

/** `baton host enable|disable|retire <name>`, naming who acted in the ledger. */
function registerHostToggle(program: Command): void {
  const hostCommand = program
    .command('host')
    .description('enable a host, disable it into a warm standby, or retire it for good');
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
          const { host, changed } = await baton.cluster.setHostEnabled(
            name,
            enabled,
            cliActor(options.session),
          );
          // In the word `baton hosts` shows (standby only while its `baton up` runs), judged by the same read.
          const judged = (await hostsShown(baton)).find((one) => one.name === host.name);
          const flag = hostFlag(judged ?? host);
          const state = host.enabled ? 'enabled' : `disabled${flag === 'disabled' ? '' : ` (${flag})`}`;
          out.result({ ...host, changed }, () =>
            changed ? `host ${host.name} ${state}` : `host ${host.name} is already ${verb}d`,
          );
        }),
      );
  }
  hostCommand
    .command('retire <name>')
    .description('forget a host no baton up serves any more: gone from hosts, status, metrics and doctor')
    .option('--session <id>', 'the session you act under, recorded in the ledger')
    .action((name: string, options: { session?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const retired = await baton.cluster.retireHost(name, cliActor(options.session));
        out.result(
          retired,
          () =>
            `host ${retired.name} retired: \`baton up --host ${shellWord(retired.name)}\` registers it again`,
        );
      }),
    );
}
