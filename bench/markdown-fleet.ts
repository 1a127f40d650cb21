/** docs/benchmarks.md's sections on the peer configurations and the fleet measures. */
import { PEERS, describePeer } from './peers.js';
import type { PerEngine, Results } from './report.js';
import { fmt, median, runsOf } from './stats.js';
import { count } from './targets.js';
import { ratiosOfRuns } from './throughput.js';

/** Every peer configuration with its settings, its rate, and Baton's rate against it. */
export function peerSection(r: Results, f: Record<string, unknown>): string {
  const t = r.throughput;
  const rows = PEERS.map((p) => {
    const runs = t.peers[p.name] ?? [];
    const ratio = median(ratiosOfRuns(t.batonPg, runs));
    return `| \`${p.name}\` | ${describePeer(p)} | ${fmt(median(runs))} | ${runsOf(runs)} | ${fmt(ratio, 2)}× |`;
  });
  const best = f.throughputVsGraphileBest;
  return `## Peer configurations

Each peer drains the same ${r.plan.n} no-op jobs as Baton on PostgreSQL, in every repetition, in each
of these configurations. \`throughputVsGraphileBest\` (${typeof best === 'number' ? best.toFixed(2) : '—'}×) is
Baton against the fastest of them in each repetition, whichever it was. How the batched
configurations were chosen: docs/decisions/0007-fleet-scale-bench.md.

| name | settings | jobs/s | runs | Baton ÷ it |
|---|---|---|---|---|
${rows.join('\n')}`;
}

const perEngine = <T>(p: PerEngine<T>, pick: (x: T) => string): string =>
  `${p.pg === null ? '—' : pick(p.pg)} | ${p.sqlite === null ? '—' : pick(p.sqlite)}`;

/** The dispatcher ticks, heartbeat search and agent start, per engine. */
export function fleetSection(r: Results): string {
  const fleet = r.plan.fleet;
  const tiers = fleet.tiers.map((tier) => {
    const key = `placing${tier}`;
    const pick = (e: 'pg' | 'sqlite'): string => {
      const runs = r.dispatch[e]?.runs[key] ?? [];
      return runs.length === 0 ? '—' : `${fmt(median(runs), 1)} (${runsOf(runs, 0)})`;
    };
    return `| placing tick, ${count(tier)} hosts | ${pick('pg')} | ${pick('sqlite')} |`;
  });
  const saturated = (e: 'pg' | 'sqlite'): string => {
    const runs = r.dispatch[e]?.runs.saturated ?? [];
    return runs.length === 0 ? '—' : `${fmt(median(runs), 1)} (${runsOf(runs, 0)})`;
  };
  const trials = perEngine(r.heartbeats, (h) =>
    h.trials.map((x) => `${x.sessions}: ${fmt(x.p99, 0)}`).join(', '),
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
| sessions beating every 2 s with p99 < 100 ms | ${perEngine(r.heartbeats, (h) => String(h.sessions))} |
| heartbeat trials (sessions: p99 ms) | ${trials} |
| agent start p50, enqueue → shell (ms) | ${perEngine(r.agentStart, (a) => fmt(a.p50, 1))} |
| agent start samples (ms) | ${perEngine(r.agentStart, (a) => runsOf(a.samples, 0))} |
| seeding the dispatcher's table (s, setup) | ${perEngine(r.dispatch, (d) => fmt(d.seedSeconds, 0))} |`;
}

/** The method of the fleet measures. */
export function fleetMethod(r: Results): string {
  const f = r.plan.fleet;
  const h = r.plan.heartbeats;
  return `- **Dispatcher tick.** The real \`Dispatcher\` of \`baton up\`, leading under a real \`LeaderElector\`,
  ticked by hand on a fresh database of each engine: ${count(f.finished)} done and ${count(f.queued)} queued
  jobs loaded in bulk, then hosts added in tiers (${f.tiers.join(', ')}), each with a live runner session
  and ${f.activePerHost} running jobs. A placing tick (every host has free slots) places a full batch of 50
  as the dispatcher does, as a set (one read of the candidates, one of the hosts, one placing
  statement; docs/decisions/0016); a saturated tick (every host at its job limit) reads the queue
  and the hosts and places nothing. ${f.ticks} timed ticks each, after an untimed one (it also sweeps for
  stale sessions; the saturated one also records why the jobs wait).
- **Heartbeats.** N live agent sessions, each holding the claim on its own task, beat every 2 s through one
  store in one process (\`sessions.heartbeat\` naming the claim, as a runner does for its agents), spread
  evenly over the period. A beat's latency runs from when it was due to the store's answer. The search
  doubles N from ${h.start} while the p99 over ${h.periods} periods (after an untimed one) stays under
  100 ms, up to ${h.max}, then bisects to ${Math.round(h.tolerance * 100)}%.
- **Agent start.** A real \`baton up\` (bin/baton.js) on a fresh database; the bench enqueues one job at a
  time whose command is \`date +%s%N > file\`, and compares the shell's clock with its own read just before
  the enqueue call. ${r.plan.agentStartSamples} samples after 2 untimed ones, each after the previous job
  finished.`;
}
