/**
 * Where the fleet's claimed and running jobs are, by where their host stands (`baton status`'s
 * hosts line and its `jobsOnHosts` field, docs/decisions/0045): a job on a host that went silent,
 * whose `baton up` is gone, or that takes no work is exactly what an operator must see, and each
 * group names its hosts so the line can say which.
 */
import { hostFlag, type HostLiveness } from './host-liveness.js';

/** A host's standing: its liveness while it takes work, else how it stopped taking it. */
export type HostPlace = 'live' | 'silent' | 'down' | 'draining' | 'drained' | 'standby' | 'disabled';

/** Every place, those an operator acts on first before those whose jobs simply finish. */
export const HOST_PLACES: readonly HostPlace[] = [
  'live',
  'silent',
  'down',
  'drained',
  'disabled',
  'draining',
  'standby',
];

/** The active jobs of the hosts in one place, and the names of those hosts that hold any, by name. */
export interface JobsOnHosts {
  readonly jobs: number;
  readonly hosts: readonly string[];
}

interface PlacedHost {
  readonly name: string;
  readonly enabled: boolean;
  readonly draining?: boolean | undefined;
  readonly liveness?: HostLiveness | undefined;
  readonly jobsActive: number;
}

/** Where a host stands, in the words `baton status` and `baton hosts` use (doctor's hosts check too). */
export function hostPlace(host: Omit<PlacedHost, 'name' | 'jobsActive'>): HostPlace {
  const flag = hostFlag(host);
  return flag === 'enabled' ? (host.liveness ?? 'live') : flag;
}

/** The active jobs by their host's place, every place present (0 and no hosts when none). */
export function jobsOnHosts(hosts: readonly PlacedHost[]): Record<HostPlace, JobsOnHosts> {
  const groups = {} as Record<HostPlace, { jobs: number; hosts: string[] }>;
  for (const place of HOST_PLACES) groups[place] = { jobs: 0, hosts: [] };
  for (const host of hosts) {
    if (host.jobsActive === 0) continue;
    const group = groups[hostPlace(host)];
    group.jobs += host.jobsActive;
    group.hosts.push(host.name);
  }
  for (const group of Object.values(groups)) group.hosts.sort();
  return groups;
}
