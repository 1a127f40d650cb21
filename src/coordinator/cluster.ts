/**
 * Cluster use cases for the adapters: hosts, job retry and who leads. `baton up` itself is the
 * daemon (src/daemon/), which uses this API and is never reached from it.
 */
import { checkedActor } from './actor-session.js';
import { validateId, validateName } from '../core/validate.js';
import { ConflictError } from '../core/errors.js';
import type { DurationMs, Instant } from '../core/time.js';
import { judgeHosts, type HostJudgement } from '../core/host-liveness.js';

import type { Session } from '../core/session.js';
import type { Actor } from '../core/task.js';
import type { Host, HostToggle } from '../store/dispatch-store.js';
import type { JobEnqueueResult, Store } from '../store/store.js';
import { DISPATCHER_LEASE } from '../core/lease.js';
import { parseRetryRam } from './inputs.js';
import { parseOlderThan } from '../core/job-retention.js';
import { jobNotFound, pruneJobs, type JobPruneReport } from './job-retention.js';

export interface LeaderDetail {
  /** The leader's session, host and pid; null when nobody leads now. */
  readonly session: number | null;
  readonly host: string | null;
  readonly pid: number | null;
  readonly term: number | null;
  readonly expiresAt: Instant | null;
  /** Until the lease expires, on the database's clock (as hosts are judged); null when nobody leads. */
  readonly expiresInMs: DurationMs | null;
  readonly current: boolean;
}

/** A host with whether its `baton up` still serves it, as `baton hosts`, the API and the dashboard show it. */
export type JudgedHost = Host & HostJudgement;

export class Cluster {
  constructor(private readonly store: Store) {}

  /** The hosts, each judged live, silent or down on the database's clock (core/host-liveness.ts). */
  async hosts(): Promise<readonly JudgedHost[]> {
    const [hosts, live] = await Promise.all([
      this.store.hosts.list(),
      this.store.sessions.list({ liveOnly: true }),
    ]);
    // Read after the reports it is compared with, so that none is from its future.
    return judgeHosts(hosts, live, await this.store.now());
  }

  /**
   * An operator's enable or disable, naming who in the ledger (issue 14, item 11); `changed` false,
   * nothing written, for a host that has that flag already.
   */
  async setHostEnabled(name: unknown, enabled: boolean, by: Actor): Promise<HostToggle> {
    const host = validateName('host', name);
    // Enabled while its `baton up` drains, it would take placements nobody starts (the runner
    // gives them back and marks it again): refused, as the dashboard's Enable is.
    const judged = enabled ? (await this.hosts()).find((one) => one.name === host) : undefined;
    if (judged?.draining === true && judged.liveness === 'live') {
      throw new ConflictError(
        `host ${host} is draining: its baton up is stopping`,
        'enable it after it has stopped, or start baton up there again',
      );
    }
    await checkedActor(this.store, by);
    return this.store.hosts.setEnabled({ name: host, enabled, actor: by.name, by: by.session });
  }

  /**
   * An operator's retire of a host for good (a laptop's host brought over by `baton db copy`, a
   * machine gone): its row leaves hosts, status, /metrics and doctor, with a `host:retired` ledger
   * row. Refused (ConflictError, nothing written) while a live `baton up` serves it or jobs there
   * are claimed or running. A later `baton up --host <name>` registers it again as a new host.
   */
  async retireHost(name: unknown, by: Actor): Promise<{ readonly name: string; readonly retired: true }> {
    const host = validateName('host', name);
    await checkedActor(this.store, by);
    const done = await this.store.hosts.retire({ name: host, actor: by.name, by: by.session });
    if (done.outcome === 'serving') {
      throw new ConflictError(
        `host ${host} is served by a live baton up (live or silent in baton hosts): it cannot be retired`,
        `stop its baton up (SIGTERM drains it) and retire it once baton hosts shows it drained or disabled`,
      );
    }
    if (done.outcome === 'busy') {
      throw new ConflictError(
        `host ${host} has ${done.jobs} claimed or running job(s): it cannot be retired`,
        'wait until a leading baton up requeues them (it rescues a dead host), or cancel them, then retire it',
      );
    }
    return { name: host, retired: true };
  }

  /**
   * Queues an ended job again, naming who asked in the ledger; with `ramMb`, under that RAM budget
   * (0: none) instead of the ended job's, as for a job the budget killed (`oom_killed`).
   */
  async retryJob(
    id: unknown,
    by: Actor,
    options: { readonly ramMb?: unknown } = {},
  ): Promise<JobEnqueueResult> {
    const checked = validateId('job', id);
    const ramMb = parseRetryRam(options.ramMb);
    if ((await this.store.jobs.get(checked)) === null) throw await jobNotFound(this.store, checked);
    await checkedActor(this.store, by);
    return this.store.jobs.retry({ id: checked, actor: by.name, by: by.session, ramMb });
  }

  /**
   * `baton job prune`: removes the finished jobs that ended more than `olderThan` ago (a duration,
   * 30d), batch after batch until none is left, naming who asked in each batch's ledger row; with
   * dryRun, counts them and changes nothing (docs/decisions/0039-job-retention.md).
   */
  async pruneJobs(
    input: { readonly olderThan: unknown; readonly dryRun?: boolean },
    by: Actor,
  ): Promise<JobPruneReport> {
    const olderThanMs = parseOlderThan(input.olderThan);
    const actor = await checkedActor(this.store, by);
    // The `jobs:pruned` row names who in words; a session acted under is said there.
    const named = actor.session === undefined ? actor.name : `${actor.name}, session ${actor.session}`;
    return pruneJobs(this.store, { olderThanMs, dryRun: input.dryRun === true, by: named });
  }

  /** The dispatcher leader with its session's host and pid, judged on the database clock. */
  async leader(): Promise<LeaderDetail> {
    const lease = await this.store.leases.get(DISPATCHER_LEASE);
    const now = await this.store.now();
    const current = lease !== null && lease.holder !== null && lease.expiresAt > now;
    if (lease === null || !current) {
      return {
        session: null,
        host: null,
        pid: null,
        term: lease?.term ?? null,
        expiresAt: null,
        expiresInMs: null,
        current: false,
      };
    }
    const id = Number(lease.holder);
    const session: Session | null = Number.isSafeInteger(id) ? await this.store.sessions.get(id) : null;
    return {
      session: session?.id ?? null,
      host: session?.host ?? null,
      pid: session?.pid ?? null,
      term: lease.term,
      expiresAt: lease.expiresAt,
      expiresInMs: lease.expiresAt - now,
      current,
    };
  }
}
