/**
 * Hand-off at enqueue, the part both engines share (docs/decisions/0024). A session whose
 * claimNext found nothing and passed `waitMs` is marked waiting in the database; an enqueue
 * meanwhile claims its new job for it in the enqueue's own commit and names the job in the
 * session's `handed_job`. This store's next claimNext for the session then takes the job by
 * clearing `handed_job` (`take`: one conditional write that needs no flush to disk), not with a
 * claim of its own: one durable commit fewer between an enqueue and a waiting worker.
 *
 * The take is a write so that of two callers taking for one session (two processes, or one
 * `baton serve` answering two requests) exactly one gets the job. It need not be durable: if a
 * crash of the database loses it, `handed_job` names the job again, and a claim that is not this
 * store's (it does not know the job) gives the job back and claims it again under a new epoch,
 * which fences the first taker; this store's own claims pass it over (`known`).
 *
 * What it remembers per session is bounded (SESSIONS_REMEMBERED, the least recently used
 * forgotten first): a forgotten session's next claim only takes its hand-off back under a new epoch
 * instead of as handed, which is safe.
 */
import { InvalidInputError } from '../core/errors.js';
import type { Job, JobId } from '../core/job.js';
import type { SessionId } from '../core/session.js';
import type { JobClaimNextParams } from './store.js';

/**
 * The reason on the `job:requeued` row of a hand-off taken back: the job goes back to the queue
 * and is claimed again in the one step, so the ledger has both (running → queued → claimed).
 */
export const HAND_OFF_NOT_TAKEN = 'hand-off not taken';

/** The longest wait a claim may mark: what PostgreSQL's int parameter holds. */
const WAIT_MS_MAX = 2_147_483_647;

export interface HandOffEngine {
  /**
   * Takes the job handed to the live session, newer than `known` (the newest job this store gave
   * it, 0 when none), by clearing `handed_job` where it still names it; null when there is none.
   */
  take(session: SessionId, known: JobId): Promise<Job | null>;
  /**
   * The claim statement: the session's hand-off, else the best due job, and the session's wait
   * mark set or cleared. `known` is null unless this store waited for the session; then the newest
   * job it gave the session: a hand-off newer than that is taken as handed (this store's wait got
   * it, and gave it to no one), one no newer is one it gave already (cleared, not given twice).
   * Otherwise a hand-off still held is given back and claimed again under a new epoch (or only
   * given back, when its task no longer takes jobs). `pending`: a hand-off made while the
   * statement ran is waiting.
   */
  claim(
    params: JobClaimNextParams,
    known: JobId | null,
  ): Promise<{ readonly job: Job | null; readonly pending: boolean }>;
}

/** How many sessions a store remembers hand-off state for (one `baton serve` serves many). */
const SESSIONS_REMEMBERED = 10_000;

/** Map.set that keeps the map to SESSIONS_REMEMBERED keys, dropping the least recently set. */
function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > SESSIONS_REMEMBERED) map.delete(map.keys().next().value as K);
}

export class HandOffs {
  /** Sessions that may have a hand-off waiting: their last claimNext waited, or saw one pending. */
  private readonly maybeHanded = new Map<SessionId, true>();
  /** The newest job claimNext gave each session: a hand-off no newer was given already. */
  private readonly newest = new Map<SessionId, JobId>();

  constructor(private readonly engine: HandOffEngine) {}

  async claimNext(params: JobClaimNextParams): Promise<Job | null> {
    const session = params.session;
    if (params.waitMs !== undefined) checkWait(params.waitMs);
    const known = this.newest.get(session) ?? 0;
    if (this.maybeHanded.has(session)) {
      const handed = await this.engine.take(session, known);
      if (handed !== null) return this.gave(session, handed);
    }
    const waited = this.maybeHanded.has(session);
    const { job, pending } = await this.engine.claim(params, waited ? known : null);
    if (job !== null) return this.gave(session, job);
    if (pending) {
      // A hand-off landed while the statement ran: take it now rather than leave it to a later call.
      const handed = await this.engine.take(session, known);
      if (handed !== null) return this.gave(session, handed);
    }
    if (params.waitMs !== undefined) remember(this.maybeHanded, session, true);
    else this.maybeHanded.delete(session);
    return null;
  }

  private gave(session: SessionId, job: Job): Job {
    this.maybeHanded.delete(session);
    remember(this.newest, session, Math.max(job.id, this.newest.get(session) ?? 0));
    return job;
  }
}

function checkWait(waitMs: number): void {
  if (!Number.isInteger(waitMs) || waitMs < 1 || waitMs > WAIT_MS_MAX) {
    throw new InvalidInputError(
      `waitMs must be a whole number of milliseconds from 1 to ${WAIT_MS_MAX}, got ${waitMs}`,
      'leave it out to look once without waiting',
    );
  }
}
