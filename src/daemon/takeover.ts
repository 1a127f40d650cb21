/**
 * A `baton up` restarted after a crash (SIGKILL, OOM, a reboot of the service) finds its host
 * still served by its predecessor's session. With one host nobody else would ever rescue that
 * session (the predecessor was the only dispatcher), so every restart would be refused. When
 * the predecessor's process is provably gone from this machine, the new one ends its sessions
 * (the runner's and its agents', which all carry its pid) as `died`, which `baton report sessions`
 * tells from a clean stop, resigns the dispatcher lease it held, and serves the host itself;
 * recovery then requeues the jobs they left, as for any ended session.
 *
 * "Provably gone": the serving session is a daemon on this host name, its pid does not exist
 * here, and its heartbeat, read on the database clock, has lapsed for two intervals. The last
 * condition protects a host name used by mistake on two machines: there the other process keeps
 * heartbeating, so this one waits two intervals, then gives up with the usual conflict.
 *
 * Before anything runs again, it kills what the predecessor's agents left: everything in the job
 * cgroups its host row names, and every process carrying its run's marker (os/containment.ts).
 * The predecessor's reaper normally did that already; this covers a reaper killed with it.
 */
import { decodeContainmentRef } from '../core/containment.js';
import type { Session } from '../core/session.js';
import { killLeftovers } from '../os/containment.js';
import { processExists } from '../os/process-tree.js';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';
import { DISPATCHER_LEASE } from '../core/lease.js';

export interface TakeoverOptions {
  readonly host: string;
  readonly heartbeatIntervalMs: number;
}

/**
 * Ends the sessions of a dead predecessor serving `host`, once provably gone; returns the
 * session taken over from, or null when there is nothing to take over (no predecessor, or one
 * that is alive or still heartbeating after the wait: registering then fails as before).
 */
export async function takeOverDeadPredecessor(
  store: Store,
  options: TakeoverOptions,
  clock: Clock,
  log: (line: string) => void,
  stop: AbortSignal,
): Promise<Session | null> {
  const lapse = 2 * options.heartbeatIntervalMs;
  const deadline = clock.monotonicNowMs() + lapse + options.heartbeatIntervalMs;
  let waiting = false;
  while (!stop.aborted) {
    const host = (await store.hosts.list()).find((entry) => entry.name === options.host);
    const served = host?.session ?? null;
    const old = served === null ? null : await store.sessions.get(served);
    if (old === null || old.state !== 'live' || old.kind !== 'daemon' || old.host !== options.host)
      return null;
    if (processExists(old.pid)) return null;
    const age = (await store.now()) - old.heartbeatAt;
    if (age >= lapse) {
      const live = await store.sessions.list({ liveOnly: true });
      const mine = live.filter((session) => session.host === options.host && session.pid === old.pid);
      for (const session of mine) await store.sessions.end(session.id, 'died');
      // Its dispatcher lease (the holder is its session id) can never be renewed: resign it for
      // the dead process, guarded by holder and term, so a leader is chosen now rather than at expiry.
      const lease = await store.leases.get(DISPATCHER_LEASE);
      if (lease !== null && lease.holder === String(old.id)) {
        await store.leases.resign({ name: DISPATCHER_LEASE, holder: lease.holder, term: lease.term });
      }
      // After the quick steps in the store (the lease is resigned before it expires), and before
      // this process registers and runs anything.
      const ref = decodeContainmentRef(host?.containmentRef ?? null);
      const killed = ref === null ? 0 : await killLeftovers(ref);
      if (killed > 0)
        log(`killed ${killed} process(es) left by session ${old.id}'s agents (${host?.containment ?? '?'})`);
      log(
        `took over host ${options.host} from session ${old.id} (pid ${old.pid} is no longer running here): ` +
          `it died, silent for ${(age / 1000).toFixed(1)} s on the database clock without ending; ` +
          `ended it and ${mine.length - 1} agent session(s) as died; recovery requeues their jobs`,
      );
      return old;
    }
    if (clock.monotonicNowMs() > deadline) return null;
    if (!waiting) {
      log(
        `host ${options.host} is served by session ${old.id}, whose pid ${old.pid} is gone: waiting for it to lapse`,
      );
      waiting = true;
    }
    await clock.sleep(Math.min(lapse - age, options.heartbeatIntervalMs) + 50, stop);
  }
  return null;
}
