/**
 * The fleet at a glance (`baton status`, `GET /v1/status`): who leads, the hosts as `baton hosts`
 * judges them, jobs by status, live claims and what waits for a person, each read as the command
 * that shows its detail reads it, on the database's clock. The inbox's lists are counted up to
 * LIST_LIMIT_MAX; `countedUpTo` says where a count stops.
 */
import { JOB_STATES, type JobState } from '../core/job.js';
import type { DurationMs, Instant } from '../core/time.js';
import type { Store } from '../store/store.js';
import { Cluster, type JudgedHost, type LeaderDetail } from './cluster.js';
import { LIST_LIMIT_MAX } from './inputs.js';

export interface FleetStatus {
  readonly now: Instant;
  readonly leader: LeaderDetail;
  readonly hosts: readonly JudgedHost[];
  /** Every job status, 0 when none. */
  readonly jobs: Readonly<Record<JobState, number>>;
  /** Queued jobs that say why they wait (a held task or workspace, no room, a gate). */
  readonly waiting: number;
  readonly claims: { readonly held: number; readonly oldestHeartbeatAgeMs: DurationMs | null };
  readonly inbox: {
    readonly escalated: number;
    readonly oldestEscalatedAt: Instant | null;
    readonly review: number;
    readonly gated: number;
    /** Each count stops here: a count equal to it means at least that many. */
    readonly countedUpTo: number;
  };
}

export async function fleetStatus(store: Store): Promise<FleetStatus> {
  const cluster = new Cluster(store);
  const limit = LIST_LIMIT_MAX;
  const [hosts, leader, stats, escalated, review, gated] = await Promise.all([
    cluster.hosts(),
    cluster.leader(),
    store.observe.stats(),
    store.lifecycle.escalations({ limit }),
    store.tasks.list({ state: 'in_review', limit }),
    store.tasks.list({ state: 'open', gated: true, limit }),
  ]);
  const jobs = Object.fromEntries(JOB_STATES.map((state) => [state, 0])) as Record<JobState, number>;
  for (const { name, count } of stats.jobsByStatus) if (name in jobs) jobs[name as JobState] = count;
  const oldest = stats.oldestClaimHeartbeatAt;
  return {
    now: stats.now,
    leader,
    hosts,
    jobs,
    waiting: stats.waitingByReason.reduce((sum, reason) => sum + reason.count, 0),
    claims: {
      held: stats.claimsHeld,
      oldestHeartbeatAgeMs: oldest === null ? null : Math.max(0, stats.now - oldest),
    },
    inbox: {
      escalated: escalated.length,
      oldestEscalatedAt: escalated[0]?.stateAt ?? null,
      review: review.length,
      gated: gated.length,
      countedUpTo: limit,
    },
  };
}
