/**
 * `baton doctor`'s facts, read with the functions Baton itself uses (`baton hosts`, `baton
 * leader`, /metrics' ledger window, the runner's containment and private state, git), and judged
 * by core/doctor.ts and core/doctor-fleet.ts. Read only: nothing here writes to the database, the
 * file system or the cgroups. The CLI command (cli/commands/doctor.ts) opens the store, adds the
 * checks that need its URL and prints them.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import {
  check,
  GIT_MINIMUM,
  judgeClock,
  sqliteClock,
  judgeDisk,
  judgeGit,
  judgeLedger,
  type DoctorCheck,
} from '../core/doctor.js';
import {
  judgeAgentHosts,
  judgeAgents,
  judgeFleetContainment,
  judgeHosts,
  judgeLeader,
  judgeState,
  type AgentCommand,
  type FleetHost,
  type FleetLeader,
} from '../core/doctor-fleet.js';
import { KEYS_READ, asciiPartners, judgeKeys } from '../core/doctor-keys.js';
import { judgeOutbox } from '../core/doctor-outbox.js';
import { age } from '../core/host-liveness.js';
import type { Instant } from '../core/time.js';
import { probeContainment } from '../os/containment.js';
import { readDisk } from '../os/disk.js';
import { gitVersionAnswer } from '../os/git.js';
import { onPath } from '../os/on-path.js';
import { looseState } from '../os/private-state.js';
import type { Store } from '../store/store.js';
import { Cluster } from './cluster.js';
import { keyFilePath } from './ledger/keys.js';
import { keyFileRetirement } from './ledger/retire.js';
import { sealingRefused } from './ledger/sealed-check.js';

/** What a read of the database refused for want of a privilege needs. */
export const ROLE_FIX =
  "give the URL's role read access to Baton's tables (`baton db roles`), or use the URL `baton up` uses";
/** What a state directory that cannot be read needs. */
const STATE_FIX =
  '`.baton` must be a directory this user owns: check it with `ls -ld .baton` (and `chown`), ' +
  'or run doctor as the user that runs `baton up`';

/** Queued jobs whose commands are looked at: the newest, one read (GET /v1/jobs' limit over the API). */
export const QUEUED_COMMANDS_READ = 200;

export interface MachineOptions {
  /** The state directory `baton up` would use here (`.baton` of the working directory). */
  readonly stateDir: string;
  /** The SQLite file, when the database is one; null on PostgreSQL or over the API. */
  readonly sqlitePath: string | null;
}

/** This machine: containment, git, `.baton/`'s modes, free disk where Baton writes. */
export async function machineChecks(options: MachineOptions): Promise<DoctorCheck[]> {
  const contained = await guarded(
    ['containment'],
    'read the cgroups',
    'check /proc/self/cgroup and /sys/fs/cgroup',
    () => {
      const containment = probeContainment();
      return [
        containment.kind === 'process-group'
          ? check(
              'containment',
              'warn',
              `${containment.detail}: agents here would run without a cgroup (a RAM budget sampled, not enforced)`,
              'run `baton up` as a user with a delegated cgroup (systemd Delegate=yes) or as root; ' +
                'docs/decisions/0009-containment.md',
            )
          : check('containment', 'ok', containment.detail),
      ];
    },
  );
  const git = await guarded(
    ['git'],
    'run `git --version`',
    `install git ${GIT_MINIMUM} or later, or fix the \`git\` first on PATH`,
    async () => [judgeGit(await gitVersionAnswer())],
  );
  const state = await guarded(['state'], `read ${options.stateDir}`, STATE_FIX, () => [
    judgeState(
      options.stateDir,
      existsSync(options.stateDir),
      looseState({ stateDir: options.stateDir, sqlitePath: options.sqlitePath }),
    ),
  ]);
  const disks: DoctorCheck[] = [
    judgeDisk('logs and worktrees', options.stateDir, readDisk(options.stateDir)),
  ];
  if (options.sqlitePath !== null && dirname(resolve(options.sqlitePath)) !== resolve(options.stateDir)) {
    const dir = dirname(resolve(options.sqlitePath));
    disks.push(judgeDisk('the SQLite database', dir, readDisk(dir)));
  }
  return [...contained, ...git, ...state, ...worst(disks)];
}

/**
 * The checks `read` makes, or, when the read throws (a directory of someone else's, a git that
 * exits 1, a table the role may not read), each of `ids` as a FAIL saying what could not be
 * done and why: one failing read is that check's failure, and the other checks still run.
 */
export async function guarded(
  ids: readonly string[],
  what: string,
  fix: string,
  read: () => DoctorCheck[] | Promise<DoctorCheck[]>,
): Promise<DoctorCheck[]> {
  try {
    return await read();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = (error as { hint?: unknown } | null)?.hint;
    const how = typeof hint === 'string' && hint !== '' ? hint : fix;
    return ids.map((id) => check(id, 'fail', `could not ${what}: ${message}`, how));
  }
}

/** One disk line: the worst of them (the first among equals). */
function worst(checks: readonly DoctorCheck[]): DoctorCheck[] {
  const rank = { fail: 3, warn: 2, skip: 1, ok: 0 } as const;
  const sorted = [...checks].sort((one, other) => rank[other.level] - rank[one.level]);
  return sorted.slice(0, 1);
}

/** The clock against the database's, from a read of its `now` between two of this machine's. */
export async function clockCheck(databaseNow: () => Promise<Instant>): Promise<DoctorCheck> {
  const before = Date.now();
  const now = await databaseNow();
  const after = Date.now();
  return judgeClock(now - (before + after) / 2, after - before);
}

/** The leader, the hosts and their containment, as `baton status` reads them. */
export function fleetChecks(leader: FleetLeader, hosts: readonly FleetHost[]): DoctorCheck[] {
  return [judgeLeader(leader), judgeHosts(hosts, age), judgeFleetContainment(hosts)];
}

/** Each agent command's program looked up on PATH (`--agent-command` as given, the queued jobs'). */
export function agentsCheck(commands: readonly AgentCommand[]): DoctorCheck {
  // `~/bin/claude` as the shell expands it: HOME's, here (`~user/…` is looked up as written).
  const home = (program: string): string =>
    program === '~' || program.startsWith('~/') ? `${homedir()}${program.slice(1)}` : program;
  return judgeAgents(commands, (program) => onPath(home(program)));
}

/** The commands of the newest queued jobs (one read), where a run's program is named. */
export async function queuedCommands(store: Store): Promise<AgentCommand[]> {
  const queued = await store.observe.jobsPage({ status: ['queued'], limit: QUEUED_COMMANDS_READ });
  return queued.flatMap((job) =>
    job.command === null ? [] : [{ where: `job ${job.id}`, command: job.command }],
  );
}

/**
 * The newest queued jobs without a command (the agents check's read) against the live hosts'
 * agent commands (hosts.agentCommandLive, read only when there is such a job): decision 0047.
 */
async function agentHostsCheck(store: Store): Promise<DoctorCheck> {
  const queued = await store.observe.jobsPage({ status: ['queued'], limit: QUEUED_COMMANDS_READ });
  return agentHostsJudged(
    queued.map((job) => job.command),
    () => store.hosts.agentCommandLive(),
  );
}

/** The same judgement from the queued jobs' commands and a read of whether an able host is live. */
export async function agentHostsJudged(
  commands: readonly (string | null)[],
  ableLive: () => Promise<boolean>,
): Promise<DoctorCheck> {
  const bare = commands.filter((command) => command === null).length;
  const read = { jobs: commands.length, limit: QUEUED_COMMANDS_READ };
  return judgeAgentHosts(bare, read, bare === 0 || (await ableLive()));
}

/** Task keys stored before keys were NFC, and pairs that are one key in NFC (decision 0054). */
async function keysCheck(store: Store): Promise<DoctorCheck[]> {
  const beyondAscii = await store.tasks.keysBeyondAscii(KEYS_READ);
  const asciiStored = new Set<string>();
  for (const form of asciiPartners(beyondAscii))
    if ((await store.tasks.get(form)) !== null) asciiStored.add(form);
  return [judgeKeys({ beyondAscii, asciiStored })];
}

/**
 * The checks the database answers: schema, clock, the ledger's window, the leader, the hosts, the
 * keys, the GitHub outbox's rows no sync applies.
 */
export async function databaseChecks(
  store: Store,
  keyFile = keyFilePath(undefined),
  database?: string,
): Promise<DoctorCheck[]> {
  // The open refused any schema but this baton's (intent `use`), so this read only names it.
  const schema = await guarded(['schema'], 'read the schema version', ROLE_FIX, async () => [
    check('schema', 'ok', `at migration ${(await store.schema()).applied}, the newest this baton knows`),
  ]);
  const clock =
    store.engine === 'sqlite'
      ? [sqliteClock()]
      : await guarded(['clock'], "read the database's clock", ROLE_FIX, async () => [
          await clockCheck(() => store.now()),
        ]);
  const ledger = guarded(['ledger'], "read the ledger's window", ROLE_FIX, async () => {
    const [window, now] = [await store.observe.ledgerWindow(), await store.now()];
    const facts = {
      keys: window.keys,
      unsealedRows: window.unsealedRows,
      oldestUnsealedAgeMs:
        window.oldestUnsealedAt === null ? null : Math.max(0, now - window.oldestUnsealedAt),
      keyFileHere: existsSync(keyFile),
      keyFileRetired: await keyFileRetirement(store, keyFile),
    };
    const refused = database === undefined ? null : await sealingRefused(store, keyFile, database);
    return [refused ?? judgeLedger(facts, age)];
  });
  const cluster = new Cluster(store);
  const agentHosts = guarded(
    ['agent-hosts'],
    "read the queued jobs and the hosts' agent commands",
    ROLE_FIX,
    async () => [await agentHostsCheck(store)],
  );
  const fleet = guarded(
    ['leader', 'hosts', 'fleet-containment'],
    'read the leader and the hosts',
    ROLE_FIX,
    async () => fleetChecks(await cluster.leader(), await cluster.hosts()),
  );
  const keys = guarded(['keys'], 'read the task keys', ROLE_FIX, () => keysCheck(store));
  const outbox = guarded(['github-outbox'], 'read the GitHub outbox', ROLE_FIX, async () => [
    judgeOutbox(await store.github.unsynced(), await store.now()),
  ]);
  const reads = [await ledger, await fleet, await agentHosts, await keys, await outbox];
  return [...schema, ...clock, ...reads.flat()];
}
