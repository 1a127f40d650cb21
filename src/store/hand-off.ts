/**
 * Hand-off at enqueue, the part both engines share (docs/decisions/0024). A session whose
 * claimNext found nothing and passed `waitMs` is marked waiting in the database; an enqueue
 * meanwhile claims its new job for it in the enqueue's own commit and names the job in the
 * session's `handed_job`. This store then takes that job with a read (`probe`), not a claim of its
 * own: one durable commit fewer between an enqueue and a waiting worker. On PostgreSQL the enqueue
 * also announces the job in its notification (`arrived`), and the woken store takes it from there
 * without even the read.
 *
 * The read is not a write, so the database cannot tell a taken hand-off from one never seen. The
 * store says it took it (`ack`, clearing `handed_job`) right after, without holding the caller up,
 * and every later claimNext for that session from this store waits for that word first. A claim
 * statement that still finds `handed_job` set takes the job as handed when this store waited for
 * the session and never gave that job out (it landed after the read); otherwise it claims the job
 * again under a new epoch: the hand-off was never taken (or its taker died before saying so) and
 * whoever had it is fenced from then on.
 *
 * What it remembers per session is bounded (SESSIONS_REMEMBERED, the least recently used
 * forgotten first): a forgotten session's next claim only takes its hand-off back under a new epoch
 * instead of as handed, which is safe.
 */
import type { Job, JobId } from '../core/job.js';
import type { SessionId } from '../core/session.js';
import type { JobClaimNextParams } from './store.js';

/**
 * The reason on the `job:requeued` row of a hand-off taken back: the job goes back to the queue
 * and is claimed again in the one step, so the ledger has both (running → queued → claimed).
 */
export const HAND_OFF_NOT_TAKEN = 'hand-off not taken';

export interface HandOffEngine {
  /** The job handed to the live session and still held by it under the hand-off's epoch; null when none. */
  probe(session: SessionId): Promise<Job | null>;
  /** Clears the session's `handed_job` if it still names `job`. */
  ack(session: SessionId, job: JobId): Promise<void>;
  /**
   * The claim statement: the session's hand-off, else the best due job, and the session's wait
   * mark set or cleared. `known` is null unless this store waited for the session; then the newest
   * job it gave the session: a hand-off newer than that is taken as handed (this store's wait got
   * it, and gave it to no one), one no newer is one it gave already (cleared, not given twice).
   * Otherwise a hand-off still held is claimed again under a new epoch. `pending`: a hand-off
   * made while the statement ran is waiting.
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
  /** Hand-offs the engine announced (PostgreSQL: in the enqueue's notification), not yet taken. */
  private readonly arrivals = new Map<SessionId, Job>();
  /** The newest job claimNext gave each session: an announcement of an older one is stale. */
  private readonly newest = new Map<SessionId, JobId>();
  /** Each session's last `ack`, which its next claimNext waits for. */
  private readonly acks = new Map<SessionId, Promise<void>>();

  constructor(private readonly engine: HandOffEngine) {}

  async claimNext(params: JobClaimNextParams): Promise<Job | null> {
    const session = params.session;
    await this.acks.get(session);
    if (this.maybeHanded.has(session)) {
      const handed = this.arrivals.get(session) ?? (await this.engine.probe(session));
      this.arrivals.delete(session);
      if (handed !== null) {
        this.maybeHanded.delete(session);
        this.gave(session, handed);
        this.said(session, handed.id);
        return handed;
      }
    }
    this.arrivals.delete(session);
    const known = this.maybeHanded.has(session) ? (this.newest.get(session) ?? 0) : null;
    const { job, pending } = await this.engine.claim(params, known);
    if (pending || (job === null && params.waitMs !== undefined)) remember(this.maybeHanded, session, true);
    else this.maybeHanded.delete(session);
    if (job !== null) this.gave(session, job);
    return job;
  }

  /**
   * A hand-off the engine announced: the job as the enqueue committed it, claimed for its session.
   * Kept only for a session this store waits for, and newer than any job it gave that session
   * (a hand-off is always a new job); the next claimNext then takes it without the read.
   */
  arrived(job: Job): void {
    const session = job.session;
    if (session === null || !this.maybeHanded.has(session)) return;
    if (job.id <= (this.newest.get(session) ?? 0)) return;
    remember(this.arrivals, session, job);
  }

  /** Waits for every `ack` in flight: a store that closes has said which hand-offs it took. */
  async settle(): Promise<void> {
    await Promise.all(this.acks.values());
  }

  private gave(session: SessionId, job: Job): void {
    remember(this.newest, session, Math.max(job.id, this.newest.get(session) ?? 0));
  }

  private said(session: SessionId, job: JobId): void {
    // A lost ack costs a new epoch at the next claim (the taker is fenced), never a second run
    // under one epoch; nothing to report here.
    const ack = this.engine.ack(session, job).catch(() => undefined);
    this.acks.set(session, ack);
    void ack.then(() => {
      if (this.acks.get(session) === ack) this.acks.delete(session);
    });
  }
}
