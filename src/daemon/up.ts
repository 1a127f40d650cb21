/**
 * `baton up`: one process that is a dispatcher candidate, the runner of this host, and (later)
 * the server. It joins under a daemon session; if that session is ever declared stale (the
 * process was paused or cut off past the threshold), its agents are already dead and it rejoins
 * under a new session as a standby rather than acting on a past it no longer owns.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeContainmentRef } from '../core/containment.js';
import { ConflictError, StoreUnavailableError } from '../core/errors.js';
import { heartbeatWindows, validateHeartbeatWindows } from '../core/heartbeat-windows.js';
import { hasPassword } from '../core/redact.js';
import type { SessionId } from '../core/session.js';
import type { Clock } from '../core/time.js';
import { openContainment, type Containment } from '../os/containment.js';
import type { WatchdogOptions } from '../os/watchdog.js';
import { readMemory } from '../os/memory.js';
import { makeStatePrivate } from '../os/private-state.js';
import { parseDbUrl } from '../store/open.js';
import type { Store } from '../store/store.js';
import { failureLog, type FailureLog } from './failure-log.js';
import { leadership } from './up-leadership.js';
import { runnerFor } from './runner-for.js';
import type { Runner } from './runner.js';
import { takeOverDeadPredecessor } from './takeover.js';
import { startLeaderSealer } from './sealer.js';
import { watchDbFile, watchSchema } from './db-file-watch.js';
import { startSweeper } from './worktree-sweep.js';
import { startLogPruner } from './log-pruner.js';
import { pumpWakeups } from './wakeup-pump.js';
import { LeaderDuties, leaderUpkeep } from './leader-duties.js';
import { AgentUids, seatedSlots } from './agent-uids.js';
import { takeBackOrphans } from '../os/lent-record.js';
import { drainOrMark, isPlannedStop, linkedAbort, unmarkUnplanned, type DrainLog } from './drain.js';
import { startLoops } from './running-line.js';

export type { UpOptions } from './up-options.js';
import type { UpOptions } from './up-options.js';

import { JOINED_LINE_START } from './up-defaults.js';
export { UP_DEFAULTS } from './up-defaults.js';

const SHIM = fileURLToPath(new URL('../os/agent-shim.js', import.meta.url));

export async function runUp(
  store: Store,
  given: UpOptions,
  clock: Clock,
  log: DrainLog,
  stop: AbortSignal,
): Promise<void> {
  const uids = given.agentUids == null ? null : new AgentUids(given.agentUids, lentRecords(given));
  // A second signal ends a drain at once; so does a lost database file or schema (`stopOn`).
  const now = linkedAbort(given.stopNow);
  const hurried = { ...given, stopNow: now.signal };
  const options = uids === null ? hurried : { ...hurried, ...seatedSlots(given.slotsMax, uids, log), uids };
  // The first join fails loudly (the CLI exits 5 or 3). A rejoin rides out what fenced us: it
  // first ends the session it was fenced under, which may still be live (the database was
  // unreachable, or no other leader exists to rescue it), and retries while the database stays
  // unreachable. Found by the chaos suite (test/chaos/rejoin.test.ts).
  validateHeartbeatWindows(options.heartbeatIntervalMs, options.staleAfterMs);
  const target = parseDbUrl(options.dbUrl);
  const sqlitePath = target.engine === 'sqlite' ? target.path : null;
  const agentUids = uids !== null;
  for (const note of makeStatePrivate({ stateDir: dirname(options.logDir), sqlitePath, agentUids }))
    log(`note: ${note}`);
  const passwordFor = (options.agentEnv ?? []).some((name) =>
    /^PGPASS(WORD|FILE)$|^PG\*$|^PGPASS\*$/.test(name),
  );
  // Served over HTTP, agents get BATON_URL and a token instead of BATON_DB: the note would be false.
  if (hasPassword(options.dbUrl) && !passwordFor && (options.apiUrl ?? null) === null) {
    log(
      'note: agents get BATON_DB without its password; to let them use the database, keep the password ' +
        'in a password file and pass --agent-env PGPASSFILE (docs/security.md)',
    );
  }
  // It stops when its SQLite file is deleted or replaced, or the schema passes it (db-file-watch.ts).
  // A stop asked for before this (a closed stdout at the first lines, a signal while the store
  // opened) has fired its event already: it stops now, before joining.
  const inner = linkedAbort(stop);
  const lost: { error: Error | null } = { error: null };
  const stopOn = (error: Error): void => {
    lost.error ??= error;
    log(`${error.message}: stopping`);
    now.abort();
    inner.abort();
  };
  const watch =
    sqlitePath === null
      ? null
      : watchDbFile(resolve(options.cwd, sqlitePath), options.heartbeatIntervalMs, stopOn);
  const schema = watchSchema(() => store.schema(), options.heartbeatIntervalMs, stopOn);
  try {
    await joinAndRejoin(store, options, clock, log, inner.signal);
  } finally {
    schema.stop();
    watch?.stop();
    inner.unlink();
    now.unlink();
    uids?.close();
  }
  if (lost.error !== null) throw lost.error;
}

/** Where a runner records what it lends to agents' uids until it takes it back: `.baton/lent`. */
function lentRecords(options: Pick<UpOptions, 'logDir'>): string {
  return join(dirname(options.logDir), 'lent');
}

/** Joins, and rejoins under a new session whenever fenced, until asked to stop. */
async function joinAndRejoin(
  store: Store,
  options: UpOptions,
  clock: Clock,
  log: DrainLog,
  stop: AbortSignal,
): Promise<void> {
  let previous: SessionId | null = null;
  // The session fenced off, until it is ended: a stop before then does not leave cleanly.
  let unended: SessionId | null = null;
  // An outage longer than the trust window fences the runner, and every retry fails alike: one
  // line, then one per 30 s, as the runner's own failures (a new log for each outage).
  let retries: FailureLog | null = null;
  while (!stop.aborted) {
    let membership: { fenced: string | null; session: SessionId };
    try {
      if (unended !== null) await store.sessions.end(unended);
      unended = null;
      membership = await runOnce(store, options, clock, log, stop, previous === null);
    } catch (error) {
      if (error instanceof SessionNotEnded) throw error;
      if (previous === null || !(error instanceof StoreUnavailableError || error instanceof ConflictError))
        throw error;
      retries ??= failureLog(log, 'cannot rejoin yet, retrying', clock);
      retries.failed(error);
      await clock.sleep(options.retryIntervalMs, stop);
      continue;
    }
    retries = null;
    if (membership.fenced === null) return;
    previous = membership.session;
    unended = previous;
    log(`fenced off: ${membership.fenced}: agents killed, rejoining as a new session`);
  }
  // Stopped while the session fenced off could not be ended yet: one last try, else exit 5.
  if (unended !== null) await endSession(store, unended, options);
}

/** One membership, under one session. Resolves with why it was fenced, or null when asked to stop. */
async function runOnce(
  store: Store,
  options: UpOptions,
  clock: Clock,
  log: DrainLog,
  stop: AbortSignal,
  first: boolean,
): Promise<{ fenced: string | null; session: SessionId }> {
  await takeOverDeadPredecessor(store, options, clock, log, stop);
  // What a dead runner lent to agents' uids is the runner's again before the sweep's git touches it.
  const runner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  await takeBackOrphans(lentRecords(options), runner, log);
  // The runner, once it exists: a pause past the watchdog's deadline fences it when it runs again.
  const late: LateFence = { fence: null };
  const containment = openContainment({
    choice: options.containment ?? 'auto',
    shimPath: SHIM,
    warm: true,
    watchdog: agentWatchdog(options, log, late),
  });
  try {
    return await joinWith(store, options, clock, log, stop, containment, first, late);
  } finally {
    await containment.close();
  }
}

/**
 * The agents' watchdog (os/watchdog.ts): pinged every half heartbeat interval, each shim or the
 * reaper kills its agents after the trust window without a ping (stale-after minus two intervals),
 * the window after which this runner, once it runs again, fences itself at its first ping when it
 * had runs under way.
 */
function agentWatchdog(options: UpOptions, log: DrainLog, late: LateFence): WatchdogOptions {
  const { trustMs } = heartbeatWindows(options.heartbeatIntervalMs, options.staleAfterMs);
  const seconds = (ms: number): string => (ms / 1000).toFixed(1);
  return {
    deadlineMs: trustMs,
    pingIntervalMs: Math.max(1, Math.floor(options.heartbeatIntervalMs / 2)),
    onLate: (silentMs) => {
      log(
        `this process did not run for ${seconds(silentMs)} s, past its agents' watchdog (${seconds(trustMs)} s): ` +
          'their shims or its reaper killed them, and recovery may hand their work on',
      );
      // Fenced at once, in the timers phase, before the killed agents' exits are read: a heartbeat
      // that lands on waking must not let their runs end as failures of their own.
      late.fence?.(
        `this process did not run for ${seconds(silentMs)} s (stopped, or starved of CPU), ` +
          `past its agents' watchdog (${seconds(trustMs)} s)`,
      );
    },
  };
}

/** How the watchdog's late ping reaches the runner of the membership under way. */
interface LateFence {
  fence: ((why: string) => void) | null;
}

/**
 * Woken past its agents' watchdog with runs under way, their agents killed (or about to be), the
 * runner fences at once, before it reads their exits. With none, nothing was lost, and its
 * heartbeat says whether the session is still its own (refused once rescued: fenced as before).
 */
function lateFenceOf(runner: Runner): (why: string) => void {
  return (why) => {
    if (runner.active > 0) runner.fence(why);
  };
}

async function joinWith(
  store: Store,
  options: UpOptions,
  clock: Clock,
  log: DrainLog,
  stop: AbortSignal,
  containment: Containment,
  first: boolean,
  late: LateFence,
): Promise<{ fenced: string | null; session: SessionId }> {
  const session = await joinAsHost(store, options, log, containment, first);
  const { elector, dispatcher } = leadership(store, options, clock, log, String(session));
  const runner = runnerFor(store, options, clock, log, session, containment);
  late.fence = lateFenceOf(runner);
  // The database down or failing fails every loop every poll: one line, then one per 30 s, then
  // "works again". A run that failed alone (a spawn, a workspace) is its own line.
  const failures = failureLog(log, 'runner', clock);
  const runFailure = logFailure(log, 'runner');
  runner.on('failed', (error, run) => (run === undefined ? failures.failed(error) : runFailure(error)));
  runner.on('beat', () => failures.recovered());
  // A job placed here on this host starts at once, without a round trip through the store; a
  // single one is placed by the runner itself, with its run's begin in the same commit.
  dispatcher.on('placed', (job) => runner.take(job));
  dispatcher.runPlacedHere((job, host, term) => runner.placeAndRun(job, host, term));
  const sweeper = startSweeper(store, clock, log, stop);
  const pruner = startLogPruner(
    { ...options, policy: options.logKeep, inUse: runner.logsInUse },
    clock,
    log,
    stop,
  );
  dispatcher.on('rescued', (rescue) => {
    if (rescue.jobsRequeued.length + rescue.jobsFailed.length + rescue.sessions.length > 0) sweeper.now();
  });
  const fenced = new Promise<string | null>((settle) => {
    runner.once('fenced', (why) => settle(why));
    // A stop that came during start-up (a Ctrl-C at once) has fired its event already.
    if (stop.aborted) settle(null);
    else stop.addEventListener('abort', () => settle(null), { once: true });
  });
  const leading = (): boolean => elector.leaderTerm() !== null;
  const sealer = startLeaderSealer(store, options.ledger, clock, log, leading);
  const upkeep = leaderUpkeep(store, session, clock, log, { ...options, elector });
  const everyLeader = [...(options.leaderDuties ?? []), ...upkeep];
  const duties = new LeaderDuties({ duties: everyLeader, clock, leading, log });
  duties.start();
  startLoops({ runner, elector, dispatcher }, session, log); // says when each has run
  // The runner looks only for jobs placed on it: an enqueue or a freed slot is the dispatcher's.
  const pumps = [
    pumpWakeups(store, stop, () => dispatcher.wake()),
    pumpWakeups(store, stop, () => runner.wake(), 'placements'),
  ];
  const wasFenced = await fenced;
  const drain = await drainOrMark(wasFenced, { store, runner, session, clock, log }, { ...options, stop });
  const dispatching = dispatcher.stop(); // at once: a pass under way places nothing more (dispatcher.ts)
  for (const pump of pumps) pump.stop();
  await Promise.all(pumps.map((pump) => pump.done));
  await sealer?.stop();
  await sweeper.stop();
  await pruner.stop();
  await duties.stop();
  await dispatching;
  await elector.stop();
  const draining = await drain?.();
  await draining?.waitForRuns();
  const left = await runner.stop(true); // bounded: a run not ended by then is left to the rescue
  if (left > 0) log(`stopped waiting for ${left} run(s) to end: their jobs are left to the leader's rescue`);
  if (wasFenced === null) await endSession(store, session, options, isPlannedStop(stop) ? undefined : log);
  return { fenced: wasFenced, session };
}

/**
 * Ends the session of a `baton up` that was asked to stop. One that cannot be ended (the database
 * lost during the drain) is not said to have left: StoreUnavailableError (exit 5) names it, and the
 * leader's rescue ends it once it is past its TTL, requeueing whatever it still holds. After a stop
 * no one planned (`unplanned`, its log), the host its drain marked is then enabled again (drain.ts).
 */
async function endSession(
  store: Store,
  session: SessionId,
  options: Pick<UpOptions, 'dbUrl' | 'cwd' | 'host'>,
  unplanned?: DrainLog,
): Promise<void> {
  try {
    await store.sessions.end(session);
    if (unplanned !== undefined) await unmarkUnplanned(store, options.host, session, unplanned);
  } catch (error) {
    // PostgreSQL's failures name the server; SQLite's (`disk I/O error`) name no file.
    const target = parseDbUrl(options.dbUrl);
    const file = target.engine === 'sqlite' ? `${resolve(options.cwd, target.path)}: ` : '';
    throw notEnded(
      session,
      error instanceof StoreUnavailableError ? errorText(error) : file + errorText(error),
    );
  }
}

/** A stop that could not end its session: never retried as a rejoin, never said to have left. */
class SessionNotEnded extends StoreUnavailableError {}

function notEnded(session: SessionId, why: string): SessionNotEnded {
  return new SessionNotEnded(
    `baton up stopped, but its session ${session} could not be ended (${why}): ` +
      "it is left to the leader's rescue, once past its TTL",
    'once the database answers, `baton status` shows it; a `baton up` that leads (or the next one on this ' +
      'host) rescues it and requeues the jobs it held',
  );
}

/** Joins: a daemon session, this host registered under it, and the host's containment recorded. */
async function joinAsHost(
  store: Store,
  options: UpOptions,
  log: (line: string) => void,
  containment: Containment,
  first: boolean,
): Promise<SessionId> {
  const session = await store.sessions.start({
    kind: 'daemon',
    host: options.host,
    pid: process.pid,
    name: 'baton up',
    ttlMs: options.staleAfterMs,
  });
  const memory = readMemory();
  // The enabled flag is the operator's: `baton host enable|disable` survives every rejoin and
  // restart. --standby sets it only when given, and only on this process's first join.
  const standby = first && options.standby;
  const host = await store.hosts
    .register({
      name: options.host,
      session: session.id,
      enabled: standby ? false : undefined,
      ramTotalMb: options.ramTotalMb ?? memory.totalMb,
      ramReservedMb: options.ramReservedMb,
      ramFreeMb: memory.availableMb,
      slotsMax: options.slotsMax,
      timeLimitMs: options.timeLimitMs ?? null,
      // From the command line or its --config file alike: placement reads it (decision 0047).
      agentCommand: options.agentCommand !== null,
    })
    .catch(async (error: unknown) => {
      // Not joined: end the session rather than leave it for recovery to find.
      await store.sessions.end(session.id).catch(() => false);
      throw error;
    });
  log(`${JOINED_LINE_START}${session.id} on host ${options.host}${joinedAs(host.enabled, standby)}`);
  await store.hosts.setContainment({
    name: options.host,
    session: session.id,
    containment: containment.kind,
    containmentRef: encodeContainmentRef(containment.ref),
  });
  log(`containment: ${containment.detail}`);
  return session.id;
}

const logFailure =
  (log: (line: string) => void, what: string) =>
  (error: unknown): void =>
    log(`${what}: ${error instanceof Error ? error.message : String(error)}`);

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

function joinedAs(enabled: boolean, standby: boolean): string {
  if (standby) return ' (standby, as --standby asks, whatever an operator set before: no work until enabled)';
  if (!enabled) return ' (disabled by an operator: no work until `baton host enable`)';
  return '';
}
