/**
 * How a host keeps each job's processes together, so that a cancel, a fence or a blown budget
 * kills all of them, and nothing outlives its runner:
 *
 * | kind            | a job's processes are                          | RAM budget               |
 * |-----------------|------------------------------------------------|--------------------------|
 * | `cgroup2`       | one cgroup (unified hierarchy); cgroup.kill     | memory.max, OOM counted  |
 * |                 |                                                | (else RSS of its members) |
 * | `cgroup1`       | one cgroup per v1 controller (memory, pids,     | memory.limit_in_bytes,   |
 * |                 | freezer); frozen, then killed                   | OOM counted              |
 * | `process-group` | the agent's group, its descendants, and every   | RSS of those, sampled    |
 * |                 | process carrying the run's BATON_RUN marker     |                          |
 *
 * `baton hosts` shows each host's kind. The host row also keeps a reference (its cgroups and
 * marker) so that a `baton up` taking the host over can kill what its dead predecessor left.
 */
export const CONTAINMENT_KINDS = ['cgroup2', 'cgroup1', 'process-group'] as const;
export type ContainmentKind = (typeof CONTAINMENT_KINDS)[number];

/** What `baton up --containment` accepts: a kind, or `auto` for the best this host allows. */
export const CONTAINMENT_CHOICES = ['auto', ...CONTAINMENT_KINDS] as const;
export type ContainmentChoice = (typeof CONTAINMENT_CHOICES)[number];

/** What a runner leaves behind for its successor: its run id (the marker's prefix) and cgroups. */
export interface ContainmentRef {
  readonly run: string;
  readonly dirs: readonly string[];
}

export function encodeContainmentRef(ref: ContainmentRef): string {
  return JSON.stringify({ run: ref.run, dirs: ref.dirs });
}

/** The reference a host row holds; null when it is missing or not one of ours. */
export function decodeContainmentRef(text: string | null): ContainmentRef | null {
  if (text === null || text === '') return null;
  try {
    const raw = JSON.parse(text) as { run?: unknown; dirs?: unknown };
    if (typeof raw.run !== 'string' || !/^[0-9a-f]{8,32}$/.test(raw.run)) return null;
    const dirs = Array.isArray(raw.dirs)
      ? raw.dirs.filter((dir): dir is string => typeof dir === 'string')
      : [];
    return { run: raw.run, dirs };
  } catch {
    return null;
  }
}
