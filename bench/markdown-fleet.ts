/** docs/benchmarks.md's sections on the peer configurations and the fleet measures. */
import { COLD_SAMPLES, STEADY_AFTER, WARMUP } from './agent-start.js';
import { PEERS, describePeer } from './peers.js';
import type { PerEngine, Results } from './report.js';
import { fmt, median, runsOf } from './stats.js';
import { count } from './targets.js';
import { ratiosOfRuns } from './throughput.js';

/** Every peer configuration with its settings, its rate, and Baton's rate against it. */
export function peerSection(results: Results, figures: Record<string, unknown>): string {
  const throughput = results.throughput;
  const rows = PEERS.map((peer) => {
    const runs = throughput.peers[peer.name] ?? [];
    const ratio = median(ratiosOfRuns(throughput.batonPg, runs));
    return `| \`${peer.name}\` | ${describePeer(peer)} | ${fmt(median(runs))} | ${runsOf(runs)} | ${fmt(ratio, 2)}× |`;
  });
  const best = figures.throughputVsGraphileBest;
  return `## Peer configurations

Each peer drains the same ${results.plan.n} no-op jobs as Baton on PostgreSQL, in every repetition, in each
of these configurations. \`throughputVsGraphileBest\` (${typeof best === 'number' ? best.toFixed(2) : '—'}×) is
Baton against the fastest of them in each repetition, whichever it was. How the batched
configurations were chosen: docs/decisions/0007-fleet-scale-bench.md.

| name | settings | jobs/s | runs | Baton ÷ it |
|---|---|---|---|---|
${rows.join('\n')}`;
}

const perEngine = <T>(values: PerEngine<T>, pick: (x: T) => string): string =>
  `${values.pg === null ? '—' : pick(values.pg)} | ${values.sqlite === null ? '—' : pick(values.sqlite)}`;

/** The dispatcher ticks, heartbeat search and agent start, per engine. */
export function fleetSection(results: Results): string {
  const fleet = results.plan.fleet;
  const tiers = fleet.tiers.map((tier) => {
    const key = `placing${tier}`;
    const pick = (engine: 'pg' | 'sqlite'): string => {
      const runs = results.dispatch[engine]?.runs[key] ?? [];
      return runs.length === 0 ? '—' : `${fmt(median(runs), 1)} (${runsOf(runs, 0)})`;
    };
    return `| placing tick, ${count(tier)} hosts | ${pick('pg')} | ${pick('sqlite')} |`;
  });
  const saturated = (engine: 'pg' | 'sqlite'): string => {
    const runs = results.dispatch[engine]?.runs.saturated ?? [];
    return runs.length === 0 ? '—' : `${fmt(median(runs), 1)} (${runsOf(runs, 0)})`;
  };
  const trials = perEngine(results.heartbeats, (beats) =>
    beats.trials.map((trial) => `${trial.sessions}: ${fmt(trial.p99, 0)}`).join(', '),
  );
  return `## Fleet

Dispatcher ticks (ms; median, then every timed tick) with ${count(fleet.finished)} finished and
${count(fleet.queued)} queued jobs in the table, ${fleet.activePerHost} active jobs per host:

| tick | PostgreSQL | SQLite |
|---|---|---|
${tiers.join('\n')}
| saturated tick, ${count(fleet.tiers.at(-1) ?? 0)} hosts | ${saturated('pg')} | ${saturated('sqlite')} |

| measure | PostgreSQL | SQLite |
|---|---|---|
| sessions beating every 2 s with p99 < 100 ms | ${perEngine(results.heartbeats, (beats) => String(beats.sessions))} |
| heartbeat trials (sessions: p99 ms) | ${trials} |
| agent start p50, enqueue → shell, past its ${STEADY_AFTER}th job (ms) | ${perEngine(results.agentStart, (start) => fmt(start.p50, 1))} |
| agent start samples, past its ${STEADY_AFTER}th job (ms) | ${perEngine(results.agentStart, (start) => runsOf(start.samples, 0))} |
| agent start p50 just after \`baton up\` started (ms) | ${perEngine(results.agentStart, (start) => fmt(start.coldP50, 1))} |
| agent start samples just after the start (ms) | ${perEngine(results.agentStart, (start) => runsOf(start.coldSamples, 0))} |
| seeding the dispatcher's table (s, setup) | ${perEngine(results.dispatch, (dispatch) => fmt(dispatch.seedSeconds, 0))} |`;
}

/** The method of the fleet measures. */
export function fleetMethod(results: Results): string {
  const fleet = results.plan.fleet;
  const heartbeats = results.plan.heartbeats;
  return `- **Dispatcher tick.** The real \`Dispatcher\` of \`baton up\`, leading under a real \`LeaderElector\`,
  ticked by hand on a fresh database of each engine: ${count(fleet.finished)} done and ${count(fleet.queued)} queued
  jobs loaded in bulk, then hosts added in tiers (${fleet.tiers.join(', ')}), each with a live runner session
  and ${fleet.activePerHost} running jobs. A placing tick (every host has free slots) places a full batch of 50
  as the dispatcher does, as a set (one read of the candidates, one of the hosts, one placing
  statement; docs/decisions/0016); a saturated tick (every host at its job limit) reads the queue
  and the hosts and places nothing. ${fleet.ticks} timed ticks each, after an untimed one (it also sweeps for
  stale sessions; the saturated one also records why the jobs wait).
- **Heartbeats.** N live agent sessions, each holding the claim on its own task, beat every 2 s through one
  store in one process (\`sessions.heartbeat\` naming the claim, as a runner does for its agents), spread
  evenly over the period. A beat's latency runs from when it was due to the store's answer. The search
  doubles N from ${heartbeats.start} while the p99 over ${heartbeats.periods} periods (after an untimed one) stays under
  100 ms, up to ${heartbeats.max}, then bisects to ${Math.round(heartbeats.tolerance * 100)}%.
- **Agent start.** A real \`baton up\` (bin/baton.js) on a fresh database; the bench enqueues one job at a
  time whose command is \`date +%s%N > file\`, and compares the shell's clock with its own read just before
  the enqueue call, each job after the previous one finished. The figure: ${results.plan.agentStartSamples} samples once
  \`baton up\` has run ${STEADY_AFTER} jobs, when its pooled PostgreSQL connections run their cached plans, as in a daemon
  that has been up a while. Beside it, jobs ${WARMUP + 1} to ${WARMUP + COLD_SAMPLES} after the start, while each connection still plans
  every statement for its values (reported, no target).`;
}
