/**
 * `baton up`'s graceful drain (docs/decisions/0034-graceful-drain.md): on the first SIGTERM or
 * SIGINT the runner starts nothing more and its host is marked draining in the store (disabled,
 * so no dispatcher places on it), while the running agents finish as usual: heartbeats, claim
 * renewals, output flushes and the runs' ends go on. It ends when the last run has ended, when
 * `--drain` runs out, or at a second signal (`now`): the runs left are then killed and requeued
 * by the caller, as a stop without a drain does.
 */
import type { Job } from '../core/job.js';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';
import type { Runner } from './runner.js';

/**
 * The reason a stop is aborted with when no operator asked for it: `baton up`'s stdout was closed
 * (its terminal or the pipe's reader gone, decision 0057). It stops as SIGTERM does, but it is no
 * planned stop: the host is not left marked as one (`drained`), and once its session ends it reads
 * `down` and BatonHostNotServing pages, as for a crash (decision 0034's amendment "a closed stdout
 * is no planned stop").
 */
export const STOP_OUTPUT_CLOSED = 'output closed';

/** Whether a stop was the operator's (a signal): every stop but a closed stdout's. */
export const isPlannedStop = (stop: AbortSignal): boolean => stop.reason !== STOP_OUTPUT_CLOSED;

/** A drain's log line and, for `baton up --json`, the same as an event's fields. */
export type DrainLog = (line: string, event?: Readonly<Record<string, unknown>>) => void;

export interface DrainParams {
  readonly store: Store;
  readonly runner: Runner;
  readonly host: string;
  readonly session: number;
  readonly clock: Clock;
  readonly log: DrainLog;
  /** How long the running agents may take to finish. */
  readonly drainMs: number;
  /** Aborted by a second signal, or when the process must stop at once (its database file gone). */
  readonly now: AbortSignal | undefined;
}

/**
 * A stop asked for with agents running or starting drains first (--drain, no second signal yet);
 * whether it drains or not, the runner starts nothing more from now on. The drain itself (the
 * host marked, the jobs placed here given back) begins when the caller calls what this returns,
 * once its dispatcher has stopped and its elector resigned, so this process places nothing more.
 * Null otherwise: a stop at once.
 */
function drainFirst(
  params: Omit<DrainParams, 'drainMs' | 'now' | 'host'>,
  options: {
    readonly host: string;
    readonly drainMs?: number | undefined;
    readonly stopNow?: AbortSignal | undefined;
  },
): (() => Promise<{ waitForRuns: () => Promise<DrainEnd> }>) | null {
  const drainMs = options.drainMs ?? 0;
  // Whatever comes next, nothing more starts: a run still starting (its job being placed here by
  // this process's dispatcher, its worktree in the making) is counted, and never spawns its agent.
  params.runner.drain();
  if (drainMs <= 0 || params.runner.active === 0 || options.stopNow?.aborted === true) return null;
  return () => startDrain({ ...params, host: options.host, drainMs, now: options.stopNow });
}

/**
 * The operator's stop with no drain to run (nothing running, or --drain 0): the host is marked as a
 * drain marks it (disabled until `baton up` starts again here), so a planned stop is told from a
 * crash: `baton hosts` says drained and the alerts give it the drain's grace, not the 2 minutes of
 * a host that stopped serving (deploy/prometheus/baton-alerts.yml). A stop that must not wait (a
 * second signal, the database file lost or its schema passed) marks nothing, as before.
 */
async function markStopped(runner: Runner, host: string, log: DrainLog, now: AbortSignal | undefined) {
  if (now?.aborted === true) return;
  try {
    const changed = await runner.markDraining();
    log(
      changed
        ? `host ${host} disabled until baton up starts again here (a planned stop, not a crash)`
        : `host ${host} already disabled`,
      { event: 'stop:marked', host, changed },
    );
  } catch (error) {
    log(
      `could not mark host ${host} stopped (it shows as down until baton up starts again): ${String(error)}`,
    );
  }
}

/**
 * After a stop (`fenced` null: not a fence), drainFirst, and when it runs no drain, the host marked
 * as one would (markStopped), when the operator asked for the stop (`stop`'s reason: isPlannedStop).
 * After a fence: null, nothing marked.
 */
export async function drainOrMark(
  fenced: string | null,
  params: Parameters<typeof drainFirst>[0],
  options: Parameters<typeof drainFirst>[1] & { readonly stop: AbortSignal },
): Promise<ReturnType<typeof drainFirst>> {
  if (fenced !== null) return null;
  const drain = drainFirst(params, options);
  if (drain !== null) return drain;
  if (isPlannedStop(options.stop))
    await markStopped(params.runner, options.host, params.log, options.stopNow);
  else params.log(unplannedLine(options.host), { event: 'stop:unplanned', host: options.host });
  return null;
}

const unplannedLine = (host: string): string =>
  `host ${host} left enabled: a closed stdout is no planned stop, so once its session ends it shows ` +
  'down, and BatonHostNotServing pages, until baton up starts again here';

/**
 * After an unplanned stop's drain, its session ended: the host its drain marked (so that nothing
 * was placed on it while its agents finished) is enabled again, and reads `down` as after a crash.
 * A host no longer draining (an operator's disable or enable since) is left as the operator left it.
 */
export async function unmarkUnplanned(
  store: Store,
  host: string,
  session: number,
  log: DrainLog,
): Promise<void> {
  try {
    const row = (await store.hosts.list()).find((each) => each.name === host);
    if (row?.draining !== true) return;
    await store.hosts.setEnabled({
      name: host,
      enabled: true,
      by: session,
      actor: 'baton up (stdout closed)',
    });
    log(unplannedLine(host), { event: 'stop:unplanned', host });
  } catch (error) {
    log(`could not enable host ${host} again after its drain (it shows drained, not down): ${String(error)}`);
  }
}

/** An AbortController aborted with `signal` too, until unlinked. */
export function linkedAbort(signal: AbortSignal | undefined): AbortController & { unlink: () => void } {
  const controller = new AbortController();
  const follow = (): void => controller.abort(signal?.reason);
  if (signal?.aborted === true) follow();
  signal?.addEventListener('abort', follow, { once: true });
  return Object.assign(controller, { unlink: () => signal?.removeEventListener('abort', follow) });
}

/** How a drain ended: every run ended, or cut short (or fenced) with `left` runs still running. */
export type DrainEnd =
  { readonly cut: null } | { readonly cut: 'time' | 'signal' | 'fence'; readonly left: number };

/**
 * Marks the host draining, then gives back the jobs placed here and not started (the runner's
 * poll goes on doing both while it drains: a mark that failed, a placement that raced it).
 * `waitForRuns` then resolves once it is over.
 */
async function startDrain(params: DrainParams): Promise<{ waitForRuns: () => Promise<DrainEnd> }> {
  const { store, runner, log, clock } = params;
  const { marked, gaveBack } = await markAndGiveBack(params);
  const runs = runner.active;
  const deadline = new Date(clock.wallNow() + params.drainMs).toISOString();
  const host =
    marked === null
      ? `host ${params.host} not marked draining (yet)`
      : marked
        ? `host ${params.host} disabled until baton up starts again here`
        : `host ${params.host} already disabled`;
  const back = gaveBack > 0 ? `; ${gaveBack} job(s) placed here and not started given back` : '';
  log(
    `draining: ${runs} run(s) to finish by ${deadline} (--drain ${params.drainMs / 1000} s); ${host}${back}; ` +
      'SIGTERM or Ctrl-C again stops at once, killing them and requeueing their jobs',
    { event: 'drain:start', runs, deadline, drainMs: params.drainMs, host: params.host, gaveBack },
  );
  // Each run's end, with its job's status as it ended (read back), said before the drain's last line.
  const said: Promise<void>[] = [];
  const onEnded = (job: Job): void => {
    const left = runner.active;
    const read = store.jobs.get(job.id).catch(() => null);
    said.push(
      read.then((ended) => {
        const status = ended?.status ?? 'unknown';
        log(`draining: job ${job.id} ${job.key} ended (${status}); ${left} run(s) still running`, {
          event: 'drain:run-ended',
          job: job.id,
          key: job.key,
          status,
          left,
        });
      }),
    );
  };
  runner.on('ended', onEnded);
  const waitForRuns = async (): Promise<DrainEnd> => {
    const timer = new AbortController();
    const now = params.now;
    const cutBy: { why: 'time' | 'signal' | null } = { why: null };
    const stopWaiting = (): void => timer.abort();
    now?.addEventListener('abort', stopWaiting, { once: true });
    try {
      if (now?.aborted !== true) {
        await Promise.race([
          runner.idle(),
          clock.sleep(params.drainMs, timer.signal).then(() => {
            cutBy.why = now?.aborted === true ? 'signal' : 'time';
          }),
        ]);
      } else cutBy.why = 'signal';
    } finally {
      timer.abort();
      now?.removeEventListener('abort', stopWaiting);
      runner.off('ended', onEnded);
    }
    await Promise.all(said);
    return drainEnd(cutBy.why, runner.active, params);
  };
  return { waitForRuns };
}

/** The host marked draining (null: the store failed), then the jobs placed here given back. */
async function markAndGiveBack({
  runner,
  log,
  host,
}: DrainParams): Promise<{ marked: boolean | null; gaveBack: number }> {
  const marked = await runner.markDraining().catch((error: unknown) => {
    log(`draining: could not mark host ${host} draining (tried again while it drains): ${String(error)}`);
    return null;
  });
  const reason = 'runner draining: placed as it began to drain';
  const gaveBack = await runner.giveBackPlaced(reason).catch((error: unknown) => {
    if (marked !== null)
      log(`draining: could not give back the jobs placed here and not started: ${String(error)}`);
    return 0;
  });
  return { marked, gaveBack };
}

/** The drain's last line, and what it says. */
function drainEnd(why: 'time' | 'signal' | null, left: number, params: DrainParams): DrainEnd {
  const killed = params.runner.killedByFence;
  if (killed !== null) {
    const line = `drain ended by a fence: ${killed} run(s) killed, their jobs left to the leader's rescue`;
    params.log(line, { event: 'drain:end', cut: 'fence', left: killed });
    return { cut: 'fence', left: killed };
  }
  if (why === null || left === 0) {
    params.log('drained: every run ended', { event: 'drain:end', cut: null, left: 0 });
    return { cut: null };
  }
  const cause = why === 'time' ? `--drain ${params.drainMs / 1000} s ran out` : 'a second signal';
  params.log(`drain cut short by ${cause}: ${left} run(s) killed, their jobs requeued`, {
    event: 'drain:end',
    cut: why,
    left,
  });
  return { cut: why, left };
}
