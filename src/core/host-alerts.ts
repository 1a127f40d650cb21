/**
 * The hosts' alert conditions (deploy/prometheus/baton-alerts.yml), judged once for both who say
 * them: /metrics serves their gauges (http/metrics-health.ts) and `baton doctor`'s hosts check warns
 * while one holds (core/doctor-fleet.ts), so the check is never ok while an alert fires.
 */
import type { HostLiveness } from './host-liveness.js';
import type { DurationMs } from './time.js';

/** BatonHostDrainedTooLong's threshold: `baton_host_drained_age_seconds > 900`. */
export const DRAINED_TOO_LONG_MS: DurationMs = 900_000;

interface AlertHost {
  readonly enabled: boolean;
  /** Disabled by its own `baton up`'s drain; absent from an older server's answer (taken as not). */
  readonly draining?: boolean | undefined;
  readonly liveness: HostLiveness;
  readonly lastReportAgeMs: DurationMs;
}

/** BatonHostNotServing's hosts (`baton_host_not_serving`): enabled, and its `baton up` silent or down. */
export function hostsNotServing<H extends AlertHost>(hosts: readonly H[]): H[] {
  return hosts.filter((host) => host.enabled && host.liveness !== 'live');
}

/** The hosts of `baton_host_drained_age_seconds`: drained by a stop of their `baton up`, none serving them again. */
export function hostsDrained<H extends AlertHost>(hosts: readonly H[]): H[] {
  return hosts.filter((host) => host.draining === true && host.liveness !== 'live');
}

/** BatonHostDrainedTooLong's hosts: drained, with the last report longer ago than its threshold. */
export function hostsDrainedTooLong<H extends AlertHost>(hosts: readonly H[]): H[] {
  return hostsDrained(hosts).filter((host) => host.lastReportAgeMs > DRAINED_TOO_LONG_MS);
}
