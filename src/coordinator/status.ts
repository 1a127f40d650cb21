/**
 * The fleet at a glance (`baton status`, `GET /v1/status`): who leads, the hosts as `baton hosts`
 * judges them, jobs by status, live claims and what waits for a person, on the database's clock:
 * the hosts and the leader as `baton hosts` and `baton leader` read them, the rest from the one
 * snapshot /metrics reads (store.observe.stats).
 */
import { JOB_STATES, type JobState } from '../core/job.js';
import type { TaskState } from '../core/task.js';
import type { DurationMs, Instant } from '../core/time.js';
import type { Store } from '../store/store.js';
import { jobsOnHosts, type HostPlace, type JobsOnHosts } from '../core/host-jobs.js';
import { Cluster, type JudgedHost, type LeaderDetail } from './cluster.js';

export interface FleetStatus {
  readonly now: Instant;
  readonly leader: LeaderDetail;
  readonly hosts: readonly JudgedHost[];
  /**
   * The claimed and running jobs by where their host stands (live, silent, down, draining, drained,
   * standby, disabled), each with the hosts that hold any: from `hosts`, the one read of them.
   */
  readonly jobsOnHosts: Readonly<Record<HostPlace, JobsOnHosts>>;
  /** Every job status, 0 when none. */
  readonly jobs: Readonly<Record<JobState, number>>;
  /**
   * Queued jobs that say why they wait (a held task or workspace, no room, a gate), and those
   * without a command that wait for an agent command but store no reason yet.
   */
  readonly waiting: number;
  /**
   * Of those, the jobs without a command that wait for a host whose `baton up` has an
   * --agent-command (WAITING_FOR_AGENT_COMMAND; decision 0047): every queued one while no live host
   * has one, over the whole queue (StoreStats.agentCommandWait). Absent from an older server's answer.
   */
  readonly waitingForAgentCommand?: number;
  readonly claims: { readonly held: number; readonly oldestHeartbeatAgeMs: DurationMs | null };
  /**
   * What waits for a person, with how long the longest-waiting escalation and review have waited
   * (durations, judged here on the database's clock, so a reader's clock plays no part).
   */
  readonly inbox: {
    readonly escalated: number;
    readonly oldestEscalatedAgeMs: DurationMs | null;
    readonly review: number;
    readonly oldestReviewAgeMs: DurationMs | null;
    /** Open tasks behind a gate. */
    readonly gated: number;
  };
}

export async function fleetStatus(store: Store): Promise<FleetStatus> {
  const cluster = new Cluster(store);
  const [hosts, leader, stats] = await Promise.all([
    cluster.hosts(),
    cluster.leader(),
    store.observe.stats(),
  ]);
  const tasks = (state: TaskState) => stats.tasksByState.find((count) => count.name === state);
  const ageOf = (state: TaskState): DurationMs | null => {
    const at = tasks(state)?.oldestAt;
    return at === undefined ? null : Math.max(0, stats.now - at);
  };
  const jobs = Object.fromEntries(JOB_STATES.map((state) => [state, 0])) as Record<JobState, number>;
  for (const { name, count } of stats.jobsByStatus) if (name in jobs) jobs[name as JobState] = count;
  const oldest = stats.oldestClaimHeartbeatAt;
  return {
    now: stats.now,
    leader,
    hosts,
    jobsOnHosts: jobsOnHosts(hosts),
    jobs,
    // A job without a command beyond the dispatcher's window stores no reason yet, but waits.
    waiting:
      stats.waitingByReason.reduce((sum, reason) => sum + reason.count, 0) +
      stats.agentCommandWait.withoutReason,
    waitingForAgentCommand: stats.agentCommandWait.jobs,
    claims: {
      held: stats.claimsHeld,
      oldestHeartbeatAgeMs: oldest === null ? null : Math.max(0, stats.now - oldest),
    },
    inbox: {
      escalated: tasks('escalated')?.count ?? 0,
      oldestEscalatedAgeMs: ageOf('escalated'),
      review: tasks('in_review')?.count ?? 0,
      oldestReviewAgeMs: ageOf('in_review'),
      gated: tasks('open')?.gated ?? 0,
    },
  };
}
