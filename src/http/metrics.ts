/**
 * `/metrics` in Prometheus text format (prom-client). Every figure but the store latency and the
 * short way's count is read from the database at scrape time (coordinator views, observe.stats):
 * right whichever process serves it and however many `baton up` share the database. Counters are
 * derived from rows that only grow: claims are never deleted, and terminal jobs count those job
 * retention removed too (its counts by state, decision 0039); started jobs count ledger rows
 * (`job:started`, and `job:claimed` with `started: true`), and timed-out runs `job:timed_out` rows
 * by who judged them, so a ledger prune shows as a counter reset, which Prometheus handles.
 *
 * The store latency is this process's own: the composition root wraps its Store once with
 * `timedStore(store, storeLatencyObserver(registry))` (meterStore in server.ts) and gives the
 * wrapped one to every user (`baton up`: the server, runner, dispatcher and leader duties), so each
 * call counts once. So is the count of claims and releases answered without Hono (shortWayCounter).
 */
import { Hono } from 'hono';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { JOB_STATES, TERMINAL_JOB_STATES } from '../core/job.js';
import type { Lease } from '../core/lease.js';
import { WAITING_CLASSES, waitingClass } from '../core/waiting.js';
import type { StoreStats } from '../store/observe-store.js';
import { healthGauges, refreshHealth } from './metrics-health.js';
import type { StoreCallObserver } from '../store/timed.js';
import type { RetentionState } from '../store/retention-store.js';
import { refusalsByReason } from './auth.js';

export interface MetricsReads {
  stats(): Promise<StoreStats>;
  dispatcherLease(): Promise<Lease | null>;
  /** What job retention has removed, by state (decision 0039). */
  jobsPruned(): Promise<RetentionState>;
}

export interface MetricsDeps {
  readonly reads: MetricsReads;
  /** The registry to serve; give the one storeLatencyObserver registered its histogram in. */
  readonly registry?: Registry | undefined;
}

/** Who stops a run past its time limit: each is shown, 0 until it has (`unrecorded` only when present). */
const TIMED_OUT_BY = ['runner', 'finish', 'leader'];

/** Claim outcomes the holder did not choose: its claim was taken from it and it was fenced. */
const FENCING_OUTCOMES = new Set(['abandoned', 'recovered', 'expired', 'escalated', 'force_released']);

/** A histogram of store call durations by method, in the registry; pass it to timedStore. */
export function storeLatencyObserver(registry: Registry): StoreCallObserver {
  const histogram = new Histogram({
    name: 'baton_store_call_duration_seconds',
    help: 'Duration of calls to the store by method, as this process saw them.',
    labelNames: ['method', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return (method, seconds, failed) =>
    histogram.observe({ method, outcome: failed ? 'error' : 'ok' }, seconds);
}

/**
 * Counts the claims and releases answered the short way (fast-claims.ts), without Hono, by route:
 * this process's own figure, like the store latency. Beside the store's `claim` calls it shows
 * whether agents' requests are plainly well-formed (a client that chunks its bodies never is).
 */
export function shortWayCounter(registry: Registry): (route: 'claim' | 'release') => void {
  const counter = new Counter({
    name: 'baton_http_short_way_total',
    help: 'Claims and releases this process answered the short way through node:http, without Hono, by route.',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const claims = counter.labels('claim');
  const releases = counter.labels('release');
  return (route) => (route === 'claim' ? claims : releases).inc();
}

/**
 * Requests this process refused, by why (auth.ts RefusedReason): its own figure, like the store
 * latency, since most refusals write nothing (an unknown secret) or are capped in the ledger.
 */
function refusedCounter(registry: Registry): Counter<'reason'> {
  return new Counter({
    name: 'baton_auth_refused_total',
    help:
      'Requests this process refused, by reason: missing, malformed, unknown, revoked, expired, ended, host ' +
      '(401), origin, scope (403).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
}

/** Runs judged past their time limit (decision 0037), by who stopped them (StoreStats.jobsTimedOut). */
function timedOutCounter(registry: Registry): Counter<'by'> {
  return new Counter({
    name: 'baton_jobs_timed_out_total',
    help:
      'Runs judged past their time limit (job:timed_out ledger rows), by who stopped them: runner (baton up ' +
      "killed the run), finish (a pull worker's finish came past it), leader (the leader's sweep failed it).",
    labelNames: ['by'] as const,
    registers: [registry],
  });
}

function gauges(registry: Registry) {
  const registers = [registry];
  return {
    queue: new Gauge({
      name: 'baton_queue_jobs',
      help: 'Jobs by status now.',
      labelNames: ['status'],
      registers,
    }),
    started: new Counter({
      name: 'baton_jobs_started_total',
      help: 'Jobs started (job:started rows, and job:claimed rows that started their job).',
      registers,
    }),
    finished: new Counter({
      name: 'baton_jobs_finished_total',
      help: 'Jobs that ended, by outcome.',
      labelNames: ['outcome'],
      registers,
    }),
    granted: new Counter({ name: 'baton_claims_granted_total', help: 'Claims ever granted.', registers }),
    held: new Gauge({ name: 'baton_claims_held', help: 'Live claims now.', registers }),
    fenced: new Counter({
      name: 'baton_claims_fenced_total',
      help: 'Claims taken from their holder (abandoned, recovered, expired, escalated, force-released).',
      registers,
    }),
    ended: new Counter({
      name: 'baton_claims_ended_total',
      help: 'Claims ended, by outcome.',
      labelNames: ['outcome'],
      registers,
    }),
    oldest: new Gauge({
      name: 'baton_claim_oldest_heartbeat_age_seconds',
      help: 'Age of the oldest heartbeat among live claims, on the database clock; 0 when none is held.',
      registers,
    }),
    term: new Gauge({
      name: 'baton_leader_term',
      help: "The dispatcher lease's term; 0 before any.",
      registers,
    }),
    leading: new Gauge({
      name: 'baton_leader_present',
      help: 'Whether a dispatcher leader holds an unexpired lease (1) or not (0).',
      registers,
    }),
    termChanges: new Counter({
      name: 'baton_leader_term_changes_total',
      help: 'Times the dispatcher lease changed hands (each change is a new term).',
      registers,
    }),
    waiting: new Gauge({
      name: 'baton_jobs_waiting',
      help: 'Queued jobs that wait, by why (the reason the dispatcher gave, in classes).',
      labelNames: ['reason'],
      registers,
    }),
    oom: new Counter({ name: 'baton_oom_kills_total', help: 'Jobs ended oom_killed.', registers }),
    timedOut: timedOutCounter(registry),
    refused: refusedCounter(registry),
    pruned: new Counter({
      name: 'baton_jobs_pruned_total',
      help: 'Finished jobs removed by job retention (baton up --retain-jobs, baton job prune).',
      registers,
    }),
  };
}

/**
 * stats() and retention's counts as of one moment: the finished counters add the two, and a prune
 * batch committed between two separate reads would count its jobs twice or not at all, which the
 * next scrape would undo (a counter going down reads as a reset). Retention's total read before and
 * after stats() is the same only if no batch committed in between; asked again otherwise.
 */
async function statsBesidePruned(reads: MetricsDeps['reads']) {
  for (let attempt = 1; ; attempt++) {
    const before = await reads.jobsPruned();
    const stats = await reads.stats();
    const pruned = await reads.jobsPruned();
    if (pruned.removed === before.removed || attempt === 5) return { stats, pruned };
  }
}

/** A counter read from the database: set to the figure, which only grows between prunes. */
function setCounter(counter: Counter<string>, value: number, labels?: Record<string, string>): void {
  if (labels === undefined) {
    counter.reset();
    counter.inc(value);
  } else {
    counter.remove(labels);
    counter.inc(labels, value);
  }
}

export function metricsRoutes(deps: MetricsDeps): Hono {
  const registry = deps.registry ?? new Registry();
  const metrics = gauges(registry);
  const health = healthGauges(registry);
  let scrape: Promise<string> = Promise.resolve('');

  const refresh = async (): Promise<string> => {
    const [{ stats, pruned }, lease] = await Promise.all([
      statsBesidePruned(deps.reads),
      deps.reads.dispatcherLease(),
    ]);
    const count = (list: StoreStats['jobsByStatus'], name: string): number =>
      list.find((entry) => entry.name === name)?.count ?? 0;
    // A finished job retention removed still finished: the counters keep it.
    const finished = (name: string): number => count(stats.jobsByStatus, name) + count(pruned.byStatus, name);
    setCounter(metrics.pruned, pruned.removed);
    for (const status of JOB_STATES) metrics.queue.set({ status }, count(stats.jobsByStatus, status));
    setCounter(metrics.started, stats.jobsStarted);
    for (const outcome of TERMINAL_JOB_STATES) setCounter(metrics.finished, finished(outcome), { outcome });
    setCounter(metrics.granted, stats.claimsGranted);
    metrics.held.set(stats.claimsHeld);
    setCounter(
      metrics.fenced,
      stats.claimsByOutcome
        .filter((ended) => FENCING_OUTCOMES.has(ended.name))
        .reduce((sum, ended) => sum + ended.count, 0),
    );
    for (const ended of stats.claimsByOutcome)
      setCounter(metrics.ended, ended.count, { outcome: ended.name });
    metrics.oldest.set(
      stats.oldestClaimHeartbeatAt === null
        ? 0
        : Math.max(0, stats.now - stats.oldestClaimHeartbeatAt) / 1000,
    );
    metrics.term.set(lease?.term ?? 0);
    metrics.leading.set(lease !== null && lease.holder !== null && lease.expiresAt > stats.now ? 1 : 0);
    setCounter(metrics.termChanges, lease?.term ?? 0);
    const waiting = new Map<string, number>(WAITING_CLASSES.map((name) => [name, 0]));
    for (const waitingCount of stats.waitingByReason) {
      const name = waitingClass(waitingCount.name);
      waiting.set(name, (waiting.get(name) ?? 0) + waitingCount.count);
    }
    for (const [reason, jobs] of waiting) metrics.waiting.set({ reason }, jobs);
    setCounter(metrics.oom, finished('oom_killed'));
    // Reset first: a series no longer in the ledger (`unrecorded`, after a prune) goes, as in a new process.
    metrics.timedOut.reset();
    for (const by of new Set([...TIMED_OUT_BY, ...stats.jobsTimedOut.map((entry) => entry.name)]))
      setCounter(metrics.timedOut, count(stats.jobsTimedOut, by), { by });
    for (const [reason, refused] of refusalsByReason()) setCounter(metrics.refused, refused, { reason });
    refreshHealth(health, stats);
    return registry.metrics();
  };

  const app = new Hono();
  app.get('/', async (context) => {
    // One scrape at a time: the metrics are shared, and a second scrape waits for the first.
    scrape = scrape.catch(() => '').then(refresh);
    try {
      return context.body(await scrape, 200, { 'content-type': registry.contentType });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return context.text(`# the store could not be read: ${message.split('\n')[0] ?? ''}\n`, 503);
    }
  });
  return app;
}
