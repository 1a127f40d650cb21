/**
 * The /metrics figures an operator is paged on (deploy/prometheus/baton-alerts.yml): hosts judged
 * live, silent or down as `baton hosts` judges them, tasks waiting for people, and the ledger's
 * tamper window. All come from the same `store.observe.stats` read as the rest of /metrics, judged
 * on the database clock (`stats.now`), so every process that serves them agrees.
 */
import { Gauge, type Registry } from 'prom-client';
import { hostsDrained, hostsNotServing } from '../core/host-alerts.js';
import { judgeHosts, type HostLiveness } from '../core/host-liveness.js';
import { TASK_STATES } from '../core/task.js';
import type { Instant } from '../core/time.js';
import type { StoreStats } from '../store/observe-store.js';

const LIVENESS: readonly HostLiveness[] = ['live', 'silent', 'down'];
/** [enabled, draining] as a host row has them: a drain disables its host, so an enabled one never drains. */
const HOST_FLAGS: readonly (readonly [boolean, boolean])[] = [
  [true, false],
  [false, false],
  [false, true],
];
/** The states a task waits in for a person (core/task.ts). */
const HUMAN_WAITS = ['escalated', 'in_review'] as const;

type HealthGauges = ReturnType<typeof healthGauges>;

/** The hosts' gauges: fleet-wide counts and age, and per host only while it is out of service. */
function hostGauges(registers: Registry[]) {
  return {
    hosts: new Gauge({
      name: 'baton_hosts',
      help:
        'Hosts by whether their baton up serves them (live; silent: no report within its runner TTL; ' +
        'down: runner ended or rescued), as baton hosts judges them, whether enabled (false: standby), ' +
        'and whether disabled by its own drain (draining="true": draining while live, drained once not).',
      labelNames: ['liveness', 'enabled', 'draining'],
      registers,
    }),
    drainedOldest: new Gauge({
      name: 'baton_host_drained_oldest_age_seconds',
      help:
        'Seconds since the last report, on the database clock, of the host drained longest and not back ' +
        '(draining="true", silent or down): its runner stopped then; 0 when none.',
      registers,
    }),
    // Per host, only while the host is out of service: at most one series per host (a fleet of at
    // most ~1,000), none for a healthy one, so the rules can name the host without a series per host
    // and state always; the fleet-wide counts above stay as they were for rules that read them.
    notServing: new Gauge({
      name: 'baton_host_not_serving',
      help:
        'One series per enabled host whose baton up no longer serves it (silent or down, as baton_hosts ' +
        'judges it), valued 1; no series for a host that is served, disabled or drained.',
      labelNames: ['host', 'liveness'],
      registers,
    }),
    drainedAge: new Gauge({
      name: 'baton_host_drained_age_seconds',
      help:
        'One series per host drained and not back (draining="true", silent or down): the seconds since ' +
        'its last report on the database clock, when its runner stopped; no series for any other host.',
      labelNames: ['host'],
      registers,
    }),
  };
}

export function healthGauges(registry: Registry) {
  const registers = [registry];
  return {
    pastTtl: new Gauge({
      name: 'baton_claims_past_ttl',
      help:
        "Live claims whose holder's session has passed its TTL on the database clock: " +
        'a leader takes them back within its --stale-after.',
      registers,
    }),
    ...hostGauges(registers),
    tasks: new Gauge({ name: 'baton_tasks', help: 'Tasks by state.', labelNames: ['state'], registers }),
    gated: new Gauge({
      name: 'baton_tasks_gated',
      help: 'Open tasks behind a gate (a design waiting for approval).',
      registers,
    }),
    oldestWait: new Gauge({
      name: 'baton_task_oldest_wait_age_seconds',
      help: 'How long the longest-waiting task in the state (escalated, in_review) has been in it; 0 when none.',
      labelNames: ['state'],
      registers,
    }),
    sealing: new Gauge({
      name: 'baton_ledger_sealing_configured',
      help: 'Whether a ledger key is registered (1), so the leader seals the ledger, or not (0).',
      registers,
    }),
    unsealed: new Gauge({
      name: 'baton_ledger_unsealed_rows',
      help: 'Ledger rows no checkpoint covers yet: the tamper window.',
      registers,
    }),
    unsealedAge: new Gauge({
      name: 'baton_ledger_oldest_unsealed_age_seconds',
      help: 'Age of the oldest ledger row no checkpoint covers, on the database clock; 0 when all are sealed.',
      registers,
    }),
  };
}

/** Seconds from `at` to `now`, 0 for none. */
const ageSeconds = (at: Instant | null, now: Instant): number =>
  at === null ? 0 : Math.max(0, now - at) / 1000;

export function refreshHealth(gauges: HealthGauges, stats: StoreStats): void {
  gauges.pastTtl.set(stats.claimsPastTtl);
  const live = stats.hosts.flatMap((host) => (host.liveSession === null ? [] : [host.liveSession]));
  const judged = judgeHosts(
    stats.hosts.map((host) => ({ ...host, session: host.liveSession?.id ?? null })),
    live,
    stats.now,
  );
  for (const liveness of LIVENESS) {
    for (const [enabled, draining] of HOST_FLAGS) {
      const hosts = judged.filter(
        (host) => host.liveness === liveness && host.enabled === enabled && host.draining === draining,
      ).length;
      gauges.hosts.set({ liveness, enabled: String(enabled), draining: String(draining) }, hosts);
    }
  }
  const drained = hostsDrained(judged);
  const oldest = drained.reduce<Instant | null>(
    (at, host) => (at === null || host.heartbeatAt < at ? host.heartbeatAt : at),
    null,
  );
  gauges.drainedOldest.set(ageSeconds(oldest, stats.now));
  // Reset first: a host back in service (or gone from the table) drops its series.
  gauges.notServing.reset();
  for (const host of hostsNotServing(judged))
    gauges.notServing.set({ host: host.name, liveness: host.liveness }, 1);
  gauges.drainedAge.reset();
  for (const host of drained)
    gauges.drainedAge.set({ host: host.name }, ageSeconds(host.heartbeatAt, stats.now));
  const tasks = (state: string) => stats.tasksByState.find((entry) => entry.name === state);
  for (const state of TASK_STATES) gauges.tasks.set({ state }, tasks(state)?.count ?? 0);
  gauges.gated.set(tasks('open')?.gated ?? 0);
  for (const state of HUMAN_WAITS) {
    gauges.oldestWait.set({ state }, ageSeconds(tasks(state)?.oldestAt ?? null, stats.now));
  }
  gauges.sealing.set(stats.ledger.keys > 0 ? 1 : 0);
  gauges.unsealed.set(stats.ledger.unsealedRows);
  gauges.unsealedAge.set(ageSeconds(stats.ledger.oldestUnsealedAt, stats.now));
}
