/**
 * `baton doctor`: the preflight a team runs on each machine on day one and after each upgrade.
 * Every check reads a real fact with the function Baton itself uses (coordinator/doctor.ts) and
 * prints one line, `ok`, `warn`, `FAIL` or `skip`, with one line saying how to fix anything not
 * ok; then a summary. Exit 0 when nothing failed (warnings allowed), 7 when a check failed, 5
 * when the database (or the API) cannot be reached, 6 when the API refuses the token. Read only:
 * it changes nothing anywhere. Over the API (`--api`, BATON_URL) it runs what the API answers and
 * skips, saying so, what needs the database itself (docs/decisions/0030-doctor.md).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import {
  agentHostsJudged,
  agentsCheck,
  clockCheck,
  databaseChecks,
  fleetChecks,
  guarded,
  ROLE_FIX,
  machineChecks,
  queuedCommands,
  QUEUED_COMMANDS_READ,
} from '../../coordinator/doctor.js';
import { check, type DoctorCheck } from '../../core/doctor.js';
import {
  ableHostLive,
  judgeLedgerPowers,
  type FleetHost,
  type FleetLeader,
} from '../../core/doctor-fleet.js';
import { ApiConnection, type Answer } from '../../agents/api-connection.js';
import {
  BatonError,
  ConflictError,
  NotBatonDatabaseError,
  NotFoundError,
  StoreUnavailableError,
} from '../../core/errors.js';
import { redactSecrets } from '../../core/redact.js';
import { openStore, parseDbUrl } from '../../store/open.js';
import { ledgerPowers } from '../../store/roles.js';
import { EXIT_CHECK_FAILED, EXIT_CODE_BY_ERROR, EXIT_UNREACHABLE, Exit } from '../exit-codes.js';
import { Output } from '../output.js';
import { remoteTarget, type RemoteTarget } from '../remote-target.js';
import { dbUrl, stateDir, type GlobalOptions } from '../run.js';
import { keyFilePath } from '../../coordinator/ledger/keys.js';

interface DoctorOptions {
  readonly agentCommand?: string;
}

/** The checks that need the database, skipped with one reason when it cannot be read. */
const DATABASE_CHECKS = [
  'schema',
  'clock',
  'ledger',
  'leader',
  'hosts',
  'agent-hosts',
  'fleet-containment',
  'keys',
  'github-outbox',
  'db-role',
];
/**
 * What doctor does not read over the API: the ledger's window (only /metrics' full count has
 * it), the stored keys (no route lists them as stored), the GitHub outbox, the role.
 */
const LOCAL_ONLY = ['ledger', 'keys', 'github-outbox', 'db-role'];

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description(
      'check this machine and the database: one line per check (ok, warn, FAIL) with how to fix it; ' +
        'exit 7 when a check failed, 5 when the database cannot be reached',
    )
    .option('--agent-command <template>', 'also check the agent command `baton up` will be given')
    .action((options: DoctorOptions, cmd: Command) => doctor(cmd, options));
}

async function doctor(cmd: Command, options: DoctorOptions): Promise<void> {
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const target = remoteTarget(globals, process.env);
  const agentCommand = options.agentCommand ?? null;
  const state = stateDir(globals);
  const url = target === null ? dbUrl(globals) : null;
  const parsed = url === null ? null : parseDbUrl(url);
  // Absolute, as the state directory is: a relative --db inside .baton/ is one path, not two.
  const sqlitePath = parsed?.engine === 'sqlite' ? resolve(parsed.path) : null;
  const [database, machine] = await Promise.all([
    target === null
      ? local(url ?? '', agentCommand, keyFilePath(undefined, state))
      : remote(target, agentCommand),
    machineChecks({ stateDir: state, sqlitePath }),
  ]);
  // In one order whichever way they were read: the database's checks, the agents, this machine.
  const order = ['database', ...DATABASE_CHECKS, 'agents'];
  const rank = (one: DoctorCheck): number => order.indexOf(one.id);
  const checks = [...[...database.checks].sort((one, other) => rank(one) - rank(other)), ...machine];
  const failed = checks.filter((one) => one.level === 'fail').length;
  new Output(globals.json === true).result({ ok: failed === 0, checks }, () => [
    ...checks.flatMap(lines),
    summary(checks),
  ]);
  if (database.exit !== null) throw new Exit(database.exit);
  if (failed > 0) throw new Exit(EXIT_CHECK_FAILED);
}

const LEVEL_WORD = { ok: 'ok', warn: 'warn', fail: 'FAIL', skip: 'skip' } as const;

function lines(one: DoctorCheck): string[] {
  const head = `${LEVEL_WORD[one.level].padEnd(4)}  ${one.id.padEnd(17)} ${one.found}`;
  return one.fix === null ? [head] : [head, `${' '.repeat(24)}fix: ${one.fix}`];
}

function summary(checks: readonly DoctorCheck[]): string {
  const count = (level: DoctorCheck['level']): number => checks.filter((one) => one.level === level).length;
  const verdict = count('fail') > 0 ? 'something Baton needs is wrong' : 'nothing failed';
  const counts = `${count('ok')} ok, ${count('warn')} warn, ${count('fail')} FAIL, ${count('skip')} skipped`;
  return `doctor: ${counts}: ${verdict}`;
}

interface DatabaseResult {
  readonly checks: DoctorCheck[];
  /**
   * The exit code the database's failure keeps, as every command exits on it: 5 when the database
   * (or the API) cannot be reached, 6 when the API refuses the token; null otherwise.
   */
  readonly exit: number | null;
}

function skipped(ids: readonly string[], why: string, fix: string | null = null): DoctorCheck[] {
  return ids.map((id) => check(id, 'skip', why, fix));
}

/** On the database itself (--db, BATON_DB, or .baton/baton.db here). */
async function local(url: string, agentCommand: string | null, keyFile: string): Promise<DatabaseResult> {
  const where = redactSecrets(url);
  let store;
  try {
    store = await openStore(url, { intent: 'use' });
  } catch (error) {
    return {
      checks: [...openFailure(where, error), agentsCheck(agentCommands(agentCommand))],
      exit: error instanceof StoreUnavailableError ? EXIT_UNREACHABLE : null,
    };
  }
  try {
    const checks = await databaseChecks(store, keyFile, url);
    const role = await ledgerPowers(url).then(judgeLedgerPowers, (error: unknown) =>
      check(
        'db-role',
        'skip',
        `the role's privileges could not be read: ${messageOf(error)}`,
        'check the URL',
      ),
    );
    const [agents] = await guarded(['agents'], "read the queued jobs' commands", ROLE_FIX, async () => [
      agentsCheck([...agentCommands(agentCommand), ...(await queuedCommands(store))]),
    ]);
    const database = check('database', 'ok', `${store.engine} ${where}`);
    return { checks: [database, ...checks, role, ...(agents === undefined ? [] : [agents])], exit: null };
  } finally {
    await store.close();
  }
}

const agentCommands = (agentCommand: string | null) =>
  agentCommand === null ? [] : [{ where: '--agent-command', command: agentCommand }];

/** Unreachable (5) and not allowed (6) keep their codes; any other refusal is a failed check. */
function keptExit(error: unknown): number | null {
  if (!(error instanceof BatonError)) return null;
  return error.code === 'store_unavailable' || error.code === 'forbidden'
    ? EXIT_CODE_BY_ERROR[error.code]
    : null;
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Why the database could not be opened, as the database and schema checks; the others skipped. */
function openFailure(where: string, error: unknown): DoctorCheck[] {
  const skip = (ids: readonly string[], see = 'database') =>
    skipped(ids, `not run: the database could not be read (see the ${see} check)`);
  if (error instanceof ConflictError) {
    // Opening without migrating refuses a schema this baton cannot use as it is.
    return [
      check('database', 'ok', where),
      check('schema', 'fail', error.message, error.hint ?? 'run `baton db migrate`'),
      ...skip(DATABASE_CHECKS.slice(1), 'schema'),
    ];
  }
  if (!(error instanceof BatonError))
    // A file system's refusal (a directory of someone else's, a file where a directory should be).
    return [
      check(
        'database',
        'fail',
        `${where}: ${messageOf(error)}`,
        'check the path and its owner and mode (`ls -ld`)',
      ),
      ...skip(DATABASE_CHECKS),
    ];
  const fix =
    error instanceof NotFoundError && !(error instanceof NotBatonDatabaseError)
      ? 'run `baton init` here (or `baton up`, which makes it), or point --db / BATON_DB at the database'
      : (error.hint ?? 'check --db / BATON_DB');
  return [check('database', 'fail', error.message, fix), ...skip(DATABASE_CHECKS)];
}

/** What doctor does not read over the API (LOCAL_ONLY), each a skip saying why. */
const LOCAL_ONLY_SKIPS: readonly DoctorCheck[] = [
  check(
    'ledger',
    'skip',
    "not read over the API: /metrics has the ledger's gauges (baton_ledger_*), but a scrape counts " +
      'every table (observe.stats), the read doctor keeps away from',
    "run `baton doctor --db <url>` where the database is reachable, or read /metrics' " +
      'baton_ledger_oldest_unsealed_age_seconds (a viewer token)',
  ),
  check(
    'keys',
    'skip',
    'local-only: the keys as stored, before the NFC the API gives every key it is sent',
    'run `baton doctor --db <url>` where the database is reachable',
  ),
  check(
    'github-outbox',
    'skip',
    'local-only: no route lists the outbox rows by repository',
    'run `baton doctor --db <url>` where the database is reachable',
  ),
  check(
    'db-role',
    'skip',
    "local-only: the role's privileges are read in the database itself, which the API does not expose",
    'run `baton doctor --db <url>` where the database is reachable',
  ),
];

/**
 * Over Baton's HTTP API: /readyz (no token, two index reads) for the schema and the database's
 * clock, GET /v1/leader and /v1/hosts (any token that may read) for the fleet. Not /v1/status:
 * it counts every table (observe.stats), and a clock read from a slow answer is a false skew.
 */
async function remote(target: RemoteTarget, agentCommand: string | null): Promise<DatabaseResult> {
  const api = new ApiConnection(target.url, target.token);
  const agents = agentsCheck(agentCommands(agentCommand));
  try {
    let ready: Answer | null = null;
    const timed = await clockCheck(async () => {
      ready = await api.ask('GET', '/readyz');
      return ready.ok ? Date.parse(String((ready.body as { now?: unknown } | null)?.now)) : NaN;
    });
    const [leader, hosts, queued] = await Promise.all([
      api.want<FleetLeader>('GET', '/v1/leader'),
      api.want<FleetHost[]>('GET', '/v1/hosts'),
      api.want<{ command: string | null }[]>('GET', `/v1/jobs?status=queued&limit=${QUEUED_COMMANDS_READ}`),
    ]);
    const [schema, clock] = readiness(ready, timed);
    const database = check('database', 'ok', `over the API at ${target.url}`);
    // As the store judges it (hosts.agentCommandLive): a live runner session, silent or not.
    const agentHosts = await agentHostsJudged(
      queued.map((job) => job.command),
      () => Promise.resolve(ableHostLive(hosts)),
    );
    return {
      checks: [
        database,
        schema,
        clock,
        ...fleetChecks(leader, hosts),
        agentHosts,
        ...LOCAL_ONLY_SKIPS,
        agents,
      ],
      exit: null,
    };
  } catch (error) {
    const failure = check(
      'database',
      'fail',
      messageOf(error),
      'check BATON_URL / --api, the token and the server',
    );
    const others = DATABASE_CHECKS.filter((id) => !LOCAL_ONLY.includes(id));
    return {
      checks: [
        failure,
        ...skipped(others, 'not run: the API did not answer (see the database check)'),
        ...LOCAL_ONLY_SKIPS,
        agents,
      ],
      exit: keptExit(error),
    };
  }
}

/** The schema and clock checks from /readyz's answer (the clock judged as read around it). */
function readiness(ready: Answer | null, clock: DoctorCheck): [DoctorCheck, DoctorCheck] {
  if (ready === null || !ready.ok)
    return [
      check(
        'schema',
        'fail',
        "the API's database is not at the migration its server knows (/readyz answered 503)",
        'run `baton db migrate` where the database is, then restart the API process',
      ),
      check('clock', 'skip', 'not run: /readyz is not ready (see the schema check)'),
    ];
  const body = ready.body as { migration?: unknown; now?: unknown } | null;
  const schema = check(
    'schema',
    'ok',
    `the API's database is at migration ${String(body?.migration)}, its newest`,
  );
  if (typeof body?.now !== 'string')
    return [
      schema,
      check('clock', 'skip', '/readyz gives no `now`: the API runs an older baton', 'upgrade it'),
    ];
  return [schema, clock];
}
