/**
 * `baton doctor`'s verdicts on the fleet (the leader and the hosts, as `baton status` reads them),
 * on the agents' commands, on the PostgreSQL role's power over the ledger and on `.baton/`'s
 * modes; core/doctor.ts has the rest and the levels.
 */
import { check, type DoctorCheck } from './doctor.js';
import { DRAINED_TOO_LONG_MS, hostsDrainedTooLong, hostsNotServing } from './host-alerts.js';
import { HOST_PLACES, hostPlace } from './host-jobs.js';
import type { HostLiveness } from './host-liveness.js';
import { shellWord } from './text.js';
import { commandPrograms } from './agent-program.js';
import type { DurationMs } from './time.js';

export interface FleetHost {
  readonly name: string;
  readonly enabled: boolean;
  readonly liveness: HostLiveness;
  readonly lastReportAgeMs: DurationMs;
  readonly containment: string | null;
  /** Disabled by its own `baton up`'s drain; absent from an older server's answer (taken as not). */
  readonly draining?: boolean;
  /** Its claimed and running jobs; absent from an older server's answer (taken as none). */
  readonly jobsActive?: number;
  /** Whether its runner runs jobs without a command (decision 0047); null: not said; absent: an older server. */
  readonly agentCommand?: boolean | null;
}

export interface FleetLeader {
  readonly current: boolean;
  readonly host: string | null;
  readonly term: number | null;
}

/** Hosts named in a line; the rest are counted. */
const NAMED = 5;

function names(hosts: readonly FleetHost[]): string {
  return words(hosts.map((host) => host.name));
}

function words(all: readonly string[]): string {
  const shown = all.slice(0, NAMED);
  return all.length > NAMED ? `${shown.join(', ')} and ${all.length - NAMED} more` : shown.join(', ');
}

export function judgeLeader(leader: FleetLeader): DoctorCheck {
  if (leader.current) return check('leader', 'ok', `${leader.host ?? '?'} leads, term ${leader.term ?? '?'}`);
  const why = leader.term === null ? 'no `baton up` ever led' : `term ${leader.term} ended or expired`;
  return check(
    'leader',
    'warn',
    `no live leader (${why}): nothing is dispatched, no stale session is rescued, the ledger is not sealed`,
    'start `baton up` on a host (`baton leader`, `baton status`)',
  );
}

/** What the hosts check says of one kind of trouble: the hosts, in words, and how to fix the first. */
interface HostTrouble {
  readonly found: string;
  readonly fix: string;
}

const start = (name: string): string => `start \`baton up --host ${shellWord(name)}\` on that machine`;

/** The alerts' conditions (core/host-alerts.ts, as /metrics judges them), each naming its hosts and a fix. */
function alertTroubles(hosts: readonly FleetHost[], age: (ms: DurationMs) => string): HostTrouble[] {
  const troubles: HostTrouble[] = [];
  const notServing = hostsNotServing(hosts);
  const [first] = notServing;
  if (first !== undefined) {
    const each = notServing.map((host) => `${host.name} ${host.liveness}`);
    const name = shellWord(first.name);
    const retire = first.liveness === 'down' ? `, or \`baton host retire ${name}\` if it left for good` : '';
    troubles.push({
      found: `enabled and not served (BatonHostNotServing, after 2 min): ${words(each)}`,
      fix: `${start(first.name)}${retire} (\`baton host disable ${name}\` while it is away)`,
    });
  }
  const drained = hostsDrainedTooLong(hosts);
  const [oldest] = [...drained].sort((one, other) => other.lastReportAgeMs - one.lastReportAgeMs);
  if (oldest !== undefined) {
    troubles.push({
      found:
        `drained and not back for over ${age(DRAINED_TOO_LONG_MS)} (BatonHostDrainedTooLong): ` +
        `${names(drained)} (last report ${age(oldest.lastReportAgeMs)} ago)`,
      fix: `${start(oldest.name)}, or \`baton host retire ${shellWord(oldest.name)}\` if it left for good`,
    });
  }
  return troubles;
}

/**
 * The hosts by where each stands, in `baton status`'s words (drained, not down, for one its own
 * drain stopped); a warning while an alert's condition holds (core/host-alerts.ts: the same
 * judgement as /metrics), and for a silent disabled or draining host that holds jobs (its `baton
 * up` killed mid-drain: they await rescue); a disabled one holding none waits for nothing.
 */
export function judgeHosts(hosts: readonly FleetHost[], age: (ms: DurationMs) => string): DoctorCheck {
  if (hosts.length === 0)
    return check('hosts', 'ok', 'no host registered yet: `baton up` registers the one it runs on');
  const places = HOST_PLACES.flatMap((place) => {
    const count = hosts.filter((host) => hostPlace(host) === place).length;
    return place === 'live' || count > 0 ? [`${count} ${place}`] : [];
  });
  const found = `${hosts.length} host(s): ${places.join(', ')}`;
  const troubles = alertTroubles(hosts, age);
  const held = (host: FleetHost): number => host.jobsActive ?? 0;
  const silent = hosts.filter((host) => !host.enabled && host.liveness === 'silent' && held(host) > 0);
  if (silent.length > 0) {
    const jobs = silent.reduce((sum, host) => sum + held(host), 0);
    troubles.push({
      found:
        `silent while disabled or draining: ${names(silent)} ` +
        `(its \`baton up\` is dead or paused; ${jobs} job(s) there await rescue)`,
      fix: `${start(silent[0]?.name ?? 'NAME')}, or start \`baton up\` on another host to lead and rescue them`,
    });
  }
  if (troubles.length === 0) return check('hosts', 'ok', found);
  return check(
    'hosts',
    'warn',
    [found, ...troubles.map((trouble) => trouble.found)].join('; '),
    troubles.map((trouble) => trouble.fix).join('; '),
  );
}

/** Hosts whose runner keeps its agents in a process group only: no cgroup, so no kernel RAM limit. */
export function judgeFleetContainment(hosts: readonly FleetHost[]): DoctorCheck {
  const weak = hosts.filter((host) => host.liveness !== 'down' && host.containment === 'process-group');
  const kinds = [...new Set(hosts.map((host) => host.containment ?? 'not reported'))].join(', ');
  if (weak.length === 0)
    return check(
      'fleet-containment',
      'ok',
      hosts.length === 0 ? 'no host registered' : `hosts use: ${kinds}`,
    );
  return check(
    'fleet-containment',
    'warn',
    `${names(weak)} run agents without a cgroup (process-group): a RAM budget is sampled, not enforced`,
    'delegate a cgroup to the user running `baton up` there (systemd Delegate=yes), then restart it; ' +
      'docs/decisions/0009-containment.md',
  );
}

/**
 * Queued jobs without a command while no live host can run them (decision 0047): they wait, and
 * nothing else is wrong, so a warning (as no leader is, decision 0030), never a FAIL. `bare`
 * counts them among the `read` newest queued jobs; `ableLive` says whether an enabled host with a
 * live runner has an agent command (or did not say, taken as able).
 */
export function judgeAgentHosts(
  bare: number,
  read: { readonly jobs: number; readonly limit: number },
  ableLive: boolean,
): DoctorCheck {
  if (bare === 0)
    return check(
      'agent-hosts',
      'ok',
      'no queued job without a command (they need a baton up with --agent-command)',
    );
  const among = read.jobs >= read.limit ? ` among the newest ${read.limit}` : '';
  const jobs = `${bare} queued job(s) without a command${among}`;
  if (ableLive) return check('agent-hosts', 'ok', `${jobs}; a live host has an agent command to run them`);
  return check(
    'agent-hosts',
    'warn',
    `${jobs} wait: no live \`baton up\` has an --agent-command, so none of them runs (\`baton hosts\`: AGENT_CMD)`,
    'start `baton up --agent-command <template>` (or agent-command in its --config) on a host, ' +
      'take them with `baton job next`, or cancel them and enqueue with --command',
  );
}

/** Whether an enabled host whose runner session is live (live or silent) can run a job without a command. */
export function ableHostLive(hosts: readonly FleetHost[]): boolean {
  return hosts.some((host) => host.enabled && host.liveness !== 'down' && host.agentCommand !== false);
}

export interface AgentCommand {
  /** Where it is configured: `baton up --agent-command`, or `job 7 (queued)`. */
  readonly where: string;
  readonly command: string;
}

/** Each agent command's program, looked up with `found` (on PATH, or an executable path). */
export function judgeAgents(
  commands: readonly AgentCommand[],
  found: (program: string) => boolean,
): DoctorCheck {
  if (commands.length === 0)
    return check(
      'agents',
      'ok',
      'no agent command to check: none queued, and no --agent-command given (pass the one `baton up` gets)',
    );
  const programs = new Map<string, string[]>();
  for (const { where, command } of commands) {
    for (const program of commandPrograms(command))
      programs.set(program, [...(programs.get(program) ?? []), where]);
  }
  const missing = [...programs.entries()].filter(([program]) => !found(program));
  if (missing.length === 0)
    return check('agents', 'ok', `on PATH: ${[...programs.keys()].join(', ') || 'nothing to look up'}`);
  const list = missing.map(([program, where]) => `${program} (${where.slice(0, 3).join(', ')})`).join('; ');
  return check(
    'agents',
    'warn',
    `not on PATH here: ${list}: on a host like this one the shell answers \`command not found\` ` +
      'when a run reaches it',
    `install ${missing[0]?.[0] ?? 'it'} for the user that runs \`baton up\`, or give its full path in the command`,
  );
}

/** What the PostgreSQL role in the URL may do to the ledger (store/roles.ts reads it). */
export interface LedgerPowers {
  readonly role: string;
  readonly superuser: boolean;
  readonly owner: boolean;
  /** Privileges held on audit_events among UPDATE, DELETE, TRUNCATE. */
  readonly privileges: readonly string[];
}

export function judgeLedgerPowers(powers: LedgerPowers | null): DoctorCheck {
  if (powers === null)
    return check('db-role', 'ok', 'SQLite: no roles; whoever can open the file can change it (keep it 0600)');
  const why = powers.superuser
    ? ['is a superuser']
    : [
        ...(powers.owner ? ['owns audit_events (it may drop its append-only triggers)'] : []),
        ...(powers.privileges.length > 0 ? [`holds ${powers.privileges.join(', ')} on audit_events`] : []),
      ];
  if (why.length === 0)
    return check('db-role', 'ok', `role ${powers.role} may append to the ledger but not change or erase it`);
  return check(
    'db-role',
    'warn',
    `role ${powers.role} ${why.join(' and ')}: whoever holds this URL can rewrite or erase the ledger`,
    'run `baton db roles` as the owner and give baton up, the CLI and the API the runtime role (docs/security.md)',
  );
}

/** A path of `.baton/` whose mode lets others in beyond what Baton wants. */
export interface LoosePath {
  readonly path: string;
  readonly mode: number;
  readonly want: number;
}

const octal = (bits: number): string => `0${bits.toString(8)}`;

export function judgeState(stateDir: string, exists: boolean, loose: readonly LoosePath[]): DoctorCheck {
  if (!exists)
    return check('state', 'ok', `no ${stateDir} here (\`baton up\` and \`baton init\` make it private)`);
  if (loose.length === 0) return check('state', 'ok', `${stateDir} and what Baton keeps in it are private`);
  const shown = loose
    .slice(0, 3)
    .map((one) => `${one.path} ${octal(one.mode)} (want ${octal(one.want)})`)
    .join(', ');
  const more = loose.length > 3 ? ` and ${loose.length - 3} more` : '';
  return check(
    'state',
    'warn',
    `open to other users: ${shown}${more}: the database holds every task and command, the logs agent output`,
    'chmod each to the mode wanted above, or restart `baton up`, which tightens them when it starts ' +
      '(with --agent-uids, the state directory and its worktrees stay 0711); docs/security.md',
  );
}
