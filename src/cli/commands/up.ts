/**
 * `baton up`: dispatcher candidate, this host's runner, and (later) the server, in one process.
 * The first SIGTERM or SIGINT drains it (--drain, daemon/drain.ts): nothing new starts here, the
 * lease is resigned, the running agents finish; then, or at a second signal or once --drain runs
 * out, it stops: agents still running are killed and their jobs requeued, the session ended.
 */
import type { Command } from 'commander';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { validateCommand } from '../../coordinator/inputs.js';
import { defaultStaleAfterMs, validateHeartbeatWindows } from '../../core/heartbeat-windows.js';
import { validateDuration, validateHostName, validateOneOf } from '../../core/validate.js';
import { CONTAINMENT_CHOICES } from '../../core/containment.js';
import { validateAgentEnvName } from '../../daemon/agent-env.js';
import { agentUidsOf } from '../../os/agent-uid.js';
import { settle } from '../settle.js';
import { systemClock } from '../../daemon/clock.js';
import { LOG_MAX_MB_DEFAULT } from '../../daemon/job-log.js';
import { LOG_KEEP_DAYS_DEFAULT, LOG_KEEP_MB_DEFAULT } from '../../daemon/log-pruner.js';
import type { UpOptions } from '../../daemon/up.js';
import { JOINED_LINE_START, UP_DEFAULTS } from '../../daemon/up-defaults.js';
import { absoluteDbUrl, parseDbUrl } from '../../store/open.js';
import { databaseName } from '../db-line.js';
import { existsSync } from 'node:fs';
import { jsonText, terminalText } from '../output.js';
import { collect, dbUrl, stateDir, withStore, type GlobalOptions } from '../run.js';
import { checkBind, checkPortFree, servingLine } from '../../http/bind.js';
import { capacityOf, logOptions } from './up-amounts.js';
import { parseRetainJobs } from '../../core/job-retention.js';
import { parseRetainOutbox } from '../../core/outbox-retention.js';
import { runWatchFlags, runWatchOptions, type RunWatchFlags } from './up-watch.js';
import { applyUpConfig } from './up-config.js';
import { ledgerOptions, notSealingLine, sealingLine } from './up-ledger.js';
import { meterStoreLazily, parseHttpFlags, serveHttpLazily, type HttpFlags } from './serve.js';

import {
  backlogFrom,
  checkGithubFlags,
  checkGithubOnly,
  checkTokenStaysWithRunner,
  githubOptions,
  webhookOf,
  type GithubFlags,
} from '../github-flags.js';
import type { Backlog } from '../../github/backlog.js';
import { markLogHost } from '../../os/log-file.js';
import { stopSignals } from './up-signals.js';
import { checkArgvSecrets } from '../argv-secrets.js';

interface UpFlags extends HttpFlags, GithubFlags, RunWatchFlags {
  readonly github?: string;
  readonly githubEvery?: string;
  readonly githubLabel?: readonly string[];
  readonly host?: string;
  readonly leaseTtl?: string;
  readonly retryInterval?: string;
  readonly heartbeatInterval?: string;
  readonly staleAfter?: string;
  readonly slots?: string;
  readonly ramMb?: string;
  readonly reservedMb?: string;
  readonly standby?: boolean;
  readonly agentCommand?: string;
  readonly containment?: string;
  readonly agentEnv?: readonly string[];
  readonly agentUids?: string;
  readonly ledgerKey?: string;
  readonly sealInterval?: string;
  readonly ledgerAnchor?: string;
  readonly logMaxMb?: string;
  readonly logKeepDays?: string;
  readonly logKeepMb?: string;
  readonly retainJobs?: string;
  readonly retainGithubOutbox?: string;
  readonly config?: string;
  readonly drain?: string;
}

/**
 * A duration from the command line (`2s`, `500ms`, `1m`; a bare number is seconds, fractions
 * allowed, as these flags always took) to milliseconds: a millisecond at least, `maxS` at most.
 */
function seconds(what: string, raw: string | undefined, fallbackMs: number, maxS = 3600): number {
  return raw === undefined ? fallbackMs : validateDuration(what, raw, 1, maxS * 1000);
}

function parseUpFlags(flags: UpFlags, globals: GlobalOptions): UpOptions {
  const leaseTtlMs = seconds('--lease-ttl', flags.leaseTtl, UP_DEFAULTS.leaseTtlMs);
  // The runner's windows come from these two alone; the lease TTL is the dispatcher's business.
  const heartbeatIntervalMs = seconds(
    '--heartbeat-interval',
    flags.heartbeatInterval,
    UP_DEFAULTS.heartbeatIntervalMs,
  );
  const staleAfterMs = seconds(
    '--stale-after',
    flags.staleAfter,
    defaultStaleAfterMs(heartbeatIntervalMs, UP_DEFAULTS.staleAfterMs),
  );
  validateHeartbeatWindows(heartbeatIntervalMs, staleAfterMs);
  const state = stateDir(globals);
  return {
    dbUrl: absoluteDbUrl(dbUrl(globals), process.cwd()),
    host: validateHostName(flags.host ?? hostname()),
    leaseTtlMs,
    retryIntervalMs: seconds(
      '--retry-interval',
      flags.retryInterval,
      Math.min(UP_DEFAULTS.retryIntervalMs, leaseTtlMs),
    ),
    heartbeatIntervalMs,
    staleAfterMs,
    pollIntervalMs: Math.min(UP_DEFAULTS.pollIntervalMs, heartbeatIntervalMs),
    recoveryIntervalMs: Math.min(UP_DEFAULTS.recoveryIntervalMs, heartbeatIntervalMs),
    ...capacityOf(flags),
    standby: flags.standby === true,
    agentCommand: flags.agentCommand === undefined ? null : validateCommand(flags.agentCommand),
    containment: validateOneOf('--containment', flags.containment ?? 'auto', CONTAINMENT_CHOICES),
    agentEnv: (flags.agentEnv ?? []).map(validateAgentEnvName),
    agentUids: flags.agentUids === undefined ? null : agentUidsOf(flags.agentUids, state),
    logDir: join(state, 'logs'),
    ...logOptions(flags),
    retainJobsMs:
      flags.retainJobs === undefined ? undefined : parseRetainJobs('--retain-jobs', flags.retainJobs),
    retainOutboxMs:
      flags.retainGithubOutbox === undefined ? undefined : parseRetainOutbox(flags.retainGithubOutbox),
    worktreeDir: join(state, 'worktrees'),
    cwd: process.cwd(),
    ...runWatchOptions(flags),
    drainMs:
      flags.drain === undefined ? DRAIN_MS_DEFAULT : validateDuration('--drain', flags.drain, 0, 86_400_000),
    ledger: ledgerOptions(flags, dbUrl(globals), state, () =>
      seconds('--seal-interval', flags.sealInterval, UP_DEFAULTS.sealIntervalMs),
    ),
  };
}

/** The flags of job logs (the cap of each, how long and how much of them are kept), finished jobs, outbox rows. */
function logFlags(command: Command): Command {
  return command
    .option(
      '--log-max-mb <mb>',
      `cap of each job's log: its head and tail are kept, the middle cut (default ${LOG_MAX_MB_DEFAULT})`,
    )
    .option(
      '--log-keep-days <days|duration>',
      `job logs older than this are pruned (default ${LOG_KEEP_DAYS_DEFAULT})`,
    )
    .option(
      '--log-keep-mb <mb>',
      `the oldest job logs are pruned past this total (default ${LOG_KEEP_MB_DEFAULT})`,
    )
    .option(
      '--retain-jobs <duration>',
      "finished jobs are removed this long after they ended, each task's newest kept (default 30d; off: never)",
    )
    .option(
      '--retain-github-outbox <duration>',
      'GitHub outbox rows are removed this long after they were applied, never before (default 7d; off: never)',
    );
}

export function registerUp(program: Command): void {
  const command = program
    .command('up')
    .description("join the cluster: dispatcher candidate and this host's runner (Ctrl-C to leave)");
  logFlags(githubOptions(upFlags(command)))
    .option(
      '--drain <duration>',
      'on SIGTERM or Ctrl-C, let running agents finish for this long, then kill and requeue (default 10m; 0: at once)',
    )
    .option(
      '--config <file>',
      "baton up's flags from a JSON file (keys: the flags without --); flags given win",
    )
    // Before the action reads its flags: the file's fill those the command line left out.
    .hook('preAction', (self) => {
      const file = self.opts<UpFlags>().config;
      if (file !== undefined) applyUpConfig(self, file);
    })
    .action(up);
}

/** The flags of `baton up`. */
function upFlags(upCommand: Command): Command {
  const first = upCommand
    .option('--host <name>', "this host's name (default the machine's hostname); one runner per name")
    .option('--lease-ttl <duration>', 'dispatcher lease TTL, renewed every third (default 15; or 15s, 500ms)')
    .option('--retry-interval <duration>', 'how often a standby tries to take the lease (default 2)')
    .option('--heartbeat-interval <duration>', 'heartbeat period of this runner and its agents (default 2)')
    .option(
      '--stale-after <duration>',
      'silence after which a session is rescued (default 10); at least 3.5 heartbeat intervals + 0.25',
    )
    .option('--slots <n>', 'most jobs this host runs at once')
    .option('--ram-mb <mb>', 'RAM this host offers in total (default: all of it)')
    .option('--reserved-mb <mb>', 'RAM kept back for the machine (default 512)')
    .option(
      '--standby',
      'make the host a warm standby: no work until `baton host enable` (without it, keep the flag)',
    );
  return runWatchFlags(first)
    .option(
      '--agent-command <template>',
      'command for jobs enqueued without one, e.g. \'claude -p "Work on {{key}}"\'',
    )
    .option(
      '--containment <kind>',
      "how to keep each job's processes together: auto (default), cgroup2, cgroup1 or process-group",
    )
    .option(
      '--agent-env <name>',
      'let agents inherit this variable (or NAME* prefix) besides PATH, HOME, locale and BATON_*; repeatable',
      collect,
    )
    .option(
      '--agent-uids <A-B>',
      'run each agent as a uid of its own from A-B (group A), at most that many at once; needs root',
    )
    .option(
      '--ledger-key <file>',
      'seal the ledger while leading, with this key (default .baton/ledger.key if present)',
    )
    .option(
      '--seal-interval <duration>',
      'how often the leader seals the ledger (default 2; every 0.1 s while writers keep it busy)',
    )
    .option(
      '--ledger-anchor <file>',
      'append an anchor line per checkpoint sealed to this file; its newest line must still match',
    )
    .option(
      '--http <host:port>',
      'serve the API and dashboard here (default 127.0.0.1:7070, else the next free port; a named one taken: exit 3)',
    )
    .option('--no-http', 'serve no HTTP')
    .option('--auth <mode>', '`required`: reads need a token too (needed to bind beyond loopback)')
    .option(
      '--github <repo>',
      'work the GitHub backlog of owner/repo: sync and labels (leader only), re-checks',
    )
    .option('--github-every <duration>', 'how often the leader syncs the issues (default 60s)')
    .option('--github-label <name>', 'import only issues with this label; repeatable (any of them)', collect)
    .option('--no-github-comments', 'do not post escalations, rejections and resolve notes as comments');
}

/**
 * How long a stopped `baton up` lets its running agents finish by default: long enough for most
 * agent runs, short enough for a deploy; the unit in deploy/systemd stops it within TimeoutStopSec
 * (docs/decisions/0034-graceful-drain.md).
 */
const DRAIN_MS_DEFAULT = 10 * 60_000;

const AUTH_FORCED =
  'reads of the API, the dashboard and /metrics need a token with --agent-uids: sign in at /login, or send one';

/**
 * The HTTP flags. Agents of uids of their own are kept out of .baton/ (the database, every job's
 * log): reads without a token on the loopback would hand them both, so with --agent-uids every
 * read needs one (`forced`, decision 0025).
 */
function httpOf(flags: UpFlags, agentUids: boolean): ReturnType<typeof parseHttpFlags> & { forced: boolean } {
  const { bind, auth } = parseHttpFlags(flags);
  const forced = agentUids && auth !== 'required';
  const final = agentUids ? 'required' : auth;
  if (bind !== null) checkBind(bind, final); // before the store opens: a refusal makes no database file
  return { bind, auth: final, forced };
}

/**
 * The line naming the database `baton up` opens, and whether it made it: read before the open,
 * which creates a missing SQLite file (a PostgreSQL database is never created, only its tables).
 */
function databaseLine(url: string): string {
  const target = parseDbUrl(url);
  const created = target.engine === 'sqlite' && !existsSync(target.path);
  return `database ${databaseName(url)}: ${created ? 'created (no database was there)' : 'opened'}`;
}

/** Joins the cluster until SIGINT or SIGTERM: the HTTP server (unless --no-http), then runUp. */
async function up(flags: UpFlags, cmd: Command): Promise<void> {
  // First: under --agent-uids a password in its argv is refused before anything else is looked at
  // (without it, the warning waits for the store to open: a refused flag stays one line).
  if (flags.agentUids !== undefined) checkArgvSecrets('up', cmd.optsWithGlobals<GlobalOptions>(), true);
  // Its first lines come after the store opens: a signal meanwhile stops it, before it joins.
  const signals = stopSignals();
  try {
    await upWith(flags, cmd, signals);
  } finally {
    signals.release();
  }
}

async function upWith(flags: UpFlags, cmd: Command, signals: ReturnType<typeof stopSignals>): Promise<void> {
  const options = parseUpFlags(flags, cmd.optsWithGlobals<GlobalOptions>());
  const { bind, auth, forced } = httpOf(flags, options.agentUids !== null);
  checkGithubOnly(flags);
  // Which variable may hold the token, before whether it is set: `export BATON_GH=…` is never advised.
  if (flags.github !== undefined) checkTokenStaysWithRunner(flags, options.agentEnv ?? []);
  if (flags.github !== undefined) checkGithubFlags(flags.github, flags);
  // Checked before the store opens, as every flag: a bad value makes no database file.
  const everyMs = validateDuration('--github-every', flags.githubEvery ?? '60s', 1000, 86_400_000);
  const database = databaseLine(dbUrl(cmd.optsWithGlobals<GlobalOptions>()));
  if (bind !== null) await checkPortFree(bind); // a refusal makes no database file
  return withStore(cmd, async (raw, out) => {
    checkArgvSecrets('up', cmd.optsWithGlobals<GlobalOptions>(), false); // every flag was accepted
    // Served: every store call of the process (server, runner, dispatcher, duties) is timed for /metrics.
    const metered = bind === null ? null : await meterStoreLazily(raw);
    const store = metered?.store ?? raw;
    const { stop, now } = signals;
    signals.watchOutput(options.drainMs ?? DRAIN_MS_DEFAULT);
    const log = upLog(out.json);
    log(database);
    log(
      `baton up on ${options.host}: lease TTL ${options.leaseTtlMs} ms, ` +
        `heartbeat ${options.heartbeatIntervalMs} ms, ` +
        (options.ledger
          ? await sealingLine(store, options.ledger.signer)
          : await notSealingLine(store, flags, stateDir(cmd.optsWithGlobals<GlobalOptions>()))),
    );
    if (forced && bind !== null) log(AUTH_FORCED);
    const backlog = flags.github === undefined ? null : await backlogFrom(store, flags.github, flags, log);
    const webhook = webhookOf(backlog, flags.githubLabel ?? []);
    const unmarked = markLogHost(options.logDir, options.host); // readers tell its logs from dead ones
    if (unmarked !== null) log(unmarked);
    const memoryByPid = new Map<number, number>();
    const rssMb = (pid: number): number | null => memoryByPid.get(pid) ?? null;
    const dashboard = { logDir: options.logDir, hostName: options.host, rssMb };
    const server =
      metered === null || bind === null
        ? null
        : await serveHttpLazily(metered, { bind, auth, dashboard, routes: webhook });
    // The URL line comes last of the start-up lines (joined, containment, leading), so that a
    // newcomer's `npm start` ends with it: once the log has been quiet a moment, or 3 s after the
    // join.
    const announce = server === null ? null : settle(() => log(servingLine(server)));
    // Counted from the join (the daemon's line `joined as session N`): a `baton up` refused before
    // it (the host served by a live process) never says it serves, however slow the refusal.
    let joined = false;
    const said = (line: string, event?: Readonly<Record<string, unknown>>): void => {
      log(line, event);
      joined ||= line.startsWith(JOINED_LINE_START);
      if (joined) announce?.bump();
    };
    try {
      // Agents reach Baton through this server, with a token of their own, not the database.
      const apiUrl = server?.url ?? null;
      const github = githubDuties(backlog, flags, everyMs, said);
      // The daemon is loaded only here: every other command starts without it (issue 22).
      const { runUp } = await import('../../daemon/up.js');
      const given = { ...options, ...github, apiUrl, memoryByPid, stopNow: now.signal };
      await runUp(store, given, systemClock, said, stop.signal);
    } catch (error) {
      announce?.drop(); // refused (the host is served by a live process, say): it never served
      throw error;
    } finally {
      signals.release();
      announce?.now();
      await server?.close();
    }
    log('left the cluster');
  });
}

/** `baton up`'s log: a timestamped line, or with --json a JSON Line with the event's fields, for a log shipper. */
function upLog(json: boolean): (line: string, event?: Readonly<Record<string, unknown>>) => void {
  return (line, event) => {
    const at = new Date().toISOString();
    process.stdout.write(`${json ? jsonText({ at, line, ...event }) : terminalText(`${at} ${line}`)}\n`);
  };
}

/** With --github: the sync and the label projector as leader duties, and the re-check before runs. */
function githubDuties(
  backlog: Backlog | null,
  flags: UpFlags,
  everyMs: number,
  log: (line: string) => void,
): Partial<UpOptions> {
  if (backlog === null) return {};
  log(`working the GitHub backlog of ${backlog.repo.full}: a sync every ${everyMs / 1000} s while leading`);
  return {
    leaderDuties: [
      {
        name: 'github sync',
        everyMs,
        run: async (signal) => {
          const report = await backlog.sync({ labels: flags.githubLabel ?? [], signal });
          const changed =
            report.added + report.updated + report.closed + report.done + report.reopened + report.repaired;
          if (changed > 0) log(`github sync ${report.repo}: ${JSON.stringify(report)}`);
        },
      },
      { name: 'github labels', everyMs: 1000, run: async (signal) => void (await backlog.project(signal)) },
    ],
    recheck: (job) => backlog.recheck(job),
  };
}
