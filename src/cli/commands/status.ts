/**
 * `baton status`: the fleet at a glance, in five lines an operator reads before anything else (who
 * leads, the hosts, the jobs, the claims, what waits for a person), each pointing at the command
 * with the detail. Read on the database's clock, here or by the API's server (coordinator/status.ts).
 */
import type { Command } from 'commander';
import { age, hostFlag } from '../../core/host-liveness.js';
import { HOST_PLACES, jobsOnHosts } from '../../core/host-jobs.js';
import { shellWord } from '../../core/text.js';
import type { FleetStatus } from '../../coordinator/status.js';
import { WAITING_FOR_AGENT_COMMAND } from '../../core/capacity.js';
import { dbUrl, withApi, type GlobalOptions } from '../run.js';
import { databaseName } from '../db-line.js';
import { remoteTarget } from '../remote-target.js';

/** Hosts named on their own line when they do not serve: the rest are counted. */
const HOSTS_NAMED = 5;
/** Hosts named in the hosts line's group of jobs on hosts of one place: the rest are counted. */
const NAMES_IN_LINE = 3;

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'the fleet at a glance: the leader, hosts, jobs by status, claims and what waits for a person',
    )
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const status = await baton.status();
        out.result(status, () => [whereLine(cmd), ...statusLines(status)]);
      }),
    );
}

export function statusLines(status: FleetStatus): string[] {
  return [
    leaderLine(status),
    ...hostLines(status),
    jobsLine(status),
    ...agentCommandLine(status),
    claimsLine(status),
    inboxLine(status),
  ];
}

/** The jobs without a command that wait for a host with an agent command (decision 0047), if any. */
function agentCommandLine({ waitingForAgentCommand: count = 0 }: FleetStatus): string[] {
  if (count === 0) return [];
  return [label('', `${count} ${count === 1 ? 'job' : 'jobs'} ${WAITING_FOR_AGENT_COMMAND}`)];
}

const label = (name: string, text: string): string => `${name.padEnd(8)} ${text}`;

/** Which database the answer is from: the one opened here, or the API's that answered. */
function whereLine(cmd: Command): string {
  const options = cmd.optsWithGlobals<GlobalOptions>();
  const remote = remoteTarget(options, process.env);
  return remote === null ? label('database', databaseName(dbUrl(options))) : label('api', remote.url);
}

function leaderLine({ leader }: FleetStatus): string {
  if (leader.current) {
    const ends =
      leader.expiresInMs === null ? '' : `, lease ends in ${age(leader.expiresInMs)} unless renewed`;
    const who = `${leader.host ?? '?'} (session ${leader.session ?? '?'}, pid ${leader.pid ?? '?'})`;
    return label('leader', `${who}, term ${leader.term ?? '?'}${ends}`);
  }
  if (leader.term === null) return label('leader', 'none: no `baton up` ever led — start one');
  return label(
    'leader',
    `none: term ${leader.term} ended or expired — start \`baton up\` on a host (\`baton leader\`)`,
  );
}

function hostLines({ hosts }: FleetStatus): string[] {
  if (hosts.length === 0) return [label('hosts', 'none registered — run `baton up` on each machine')];
  // The enabled hosts by liveness, and the standby ones apart, each counted once; slots of live
  // enabled hosts, and the jobs every other host still holds (their free slots take nothing) apart.
  const enabled = hosts.filter((host) => host.enabled);
  // A disabled or draining host whose runner went silent (killed mid-drain) counts as silent too.
  const silent = hosts.filter((host) => !host.enabled && hostFlag(host) === 'silent');
  const count = (liveness: string) =>
    enabled.filter((host) => host.liveness === liveness).length + (liveness === 'silent' ? silent.length : 0);
  const live = enabled.filter((host) => host.liveness === 'live');
  const busy = live.reduce((sum, host) => sum + host.jobsActive, 0);
  const slots = live.reduce((sum, host) => sum + host.slotsMax, 0);
  // A warm standby is a disabled host whose `baton up` runs: one that is silent or down is no standby.
  const disabled = hosts.filter((host) => !host.enabled);
  const standby = disabled.filter((host) => hostFlag(host) === 'standby').length;
  const draining = disabled.filter((host) => hostFlag(host) === 'draining').length;
  // Drained: its `baton up` stopped after a drain and none serves it again; its next start enables it.
  const drained = disabled.filter((host) => hostFlag(host) === 'drained');
  const off = disabled.length - standby - draining - drained.length - silent.length;
  const parts = [
    `${count('live')} live`,
    ...(count('silent') > 0 ? [`${count('silent')} silent`] : []),
    ...(count('down') > 0 ? [`${count('down')} down`] : []),
    ...(standby > 0 ? [`${standby} in warm standby`] : []),
    ...(draining > 0 ? [`${draining} draining`] : []),
    ...(drained.length > 0 ? [`${drained.length} drained`] : []),
    ...(off > 0 ? [`${off} disabled and not serving`] : []),
  ];
  const summary = `${parts.join(', ')}; ${busy}/${slots} slots busy${elsewhere(hosts)}`;
  const notServed = [...enabled.filter((host) => host.liveness !== 'live'), ...silent, ...drained];
  const named = notServed.slice(0, HOSTS_NAMED).map((host) => label('', notServedLine(host)));
  const rest =
    notServed.length > HOSTS_NAMED ? [label('', `and ${notServed.length - HOSTS_NAMED} more`)] : [];
  return [label('hosts', summary), ...named, ...rest];
}

/**
 * A host named under the hosts line: enabled and not served; disabled or draining with its runner
 * silent (its session not ended: no drain ended there, its jobs await rescue); or drained and not
 * started again.
 */
function notServedLine(host: FleetStatus['hosts'][number]): string {
  const last = `last report ${age(host.lastReportAgeMs)} ago`;
  if (host.enabled) return `${host.name} ${host.liveness}, ${last} — \`baton hosts\``;
  if (hostFlag(host) === 'silent') {
    const when = host.draining ? ' while draining' : ' while disabled';
    const jobs =
      host.jobsActive === 0
        ? 'its session was never ended'
        : `its ${host.jobsActive} job(s) await rescue (requeued once a \`baton up\` leads)`;
    return (
      `${host.name} silent${when}, ${last}: its \`baton up\` is dead or paused and ${jobs} — ` +
      `start \`baton up --host ${shellWord(host.name)}\` there`
    );
  }
  return (
    `${host.name} drained, ${last}: its \`baton up\` stopped after a drain and none serves it — ` +
    `start \`baton up --host ${shellWord(host.name)}\` there (that enables it again), ` +
    `or \`baton host retire ${shellWord(host.name)}\` if it is gone for good`
  );
}

/**
 * The jobs on hosts that take no work or do not serve, by the host's place, each group naming its
 * first hosts (decision 0045): a job on a silent or down host waits for recovery, not its agent;
 * one on a draining, drained, standby or disabled host finishes there (or is recovered) and
 * takes none of the slots counted before it. Computed from the hosts, so an older server's answer
 * says it too.
 */
function elsewhere(hosts: FleetStatus['hosts']): string {
  const groups = jobsOnHosts(hosts);
  return HOST_PLACES.filter((place) => place !== 'live' && groups[place].jobs > 0)
    .map((place) => {
      const { jobs, hosts: names } = groups[place];
      const more = names.length > NAMES_IN_LINE ? ` and ${names.length - NAMES_IN_LINE} more` : '';
      return `, ${jobs} more running on ${place} hosts (${names.slice(0, NAMES_IN_LINE).join(', ')}${more})`;
    })
    .join('');
}

function jobsLine({ jobs, waiting }: FleetStatus): string {
  const active = `${jobs.running} running, ${jobs.claimed} claimed, ${jobs.queued} queued (${waiting} waiting)`;
  const ended = (['done', 'failed', 'oom_killed', 'cancelled', 'escalated'] as const)
    .filter((state) => jobs[state] > 0)
    .map((state) => `${jobs[state]} ${state}`);
  return label(
    'jobs',
    `${active}; ended: ${ended.length === 0 ? 'none' : ended.join(', ')} — \`baton queue list\``,
  );
}

function claimsLine({ claims }: FleetStatus): string {
  if (claims.held === 0 || claims.oldestHeartbeatAgeMs === null) return label('claims', 'none live');
  return label('claims', `${claims.held} live, oldest heartbeat ${age(claims.oldestHeartbeatAgeMs)} ago`);
}

function inboxLine({ inbox }: FleetStatus): string {
  if (inbox.escalated + inbox.review + inbox.gated === 0) return label('inbox', 'nothing waits for a person');
  const oldest = (ageMs: number | null): string => (ageMs === null ? '' : ` (oldest ${age(ageMs)})`);
  const parts: [number, string, string][] = [
    [
      inbox.escalated,
      `${inbox.escalated} escalated${oldest(inbox.oldestEscalatedAgeMs)}`,
      '`baton escalations`',
    ],
    [
      inbox.review,
      `${inbox.review} in review${oldest(inbox.oldestReviewAgeMs)}`,
      '`baton task list --state in_review`',
    ],
    [inbox.gated, `${inbox.gated} behind a gate`, '`baton task list --gated`'],
  ];
  const shown = parts.filter(([count]) => count > 0);
  const where = [...shown.map(([, , command]) => command), "the dashboard's Inbox"].join(', ');
  return label('inbox', `${shown.map(([, text]) => text).join(', ')} — ${where}`);
}
