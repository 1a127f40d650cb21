/**
 * Whether a running agent's claim is still ours, from two chains that never wait on each other
 * (issue 14, item 5). The claim's heartbeat alone vouches for the claim: a beat the database took
 * moves `lastOkMs` to the time it was sent, and the run's watchdog (agent-run.ts) kills the agent
 * as fenced once that is older than the trust window. The beat has connections of its own on
 * PostgreSQL (the store's liveness pool); the read of the job row, started when a beat answers,
 * goes through the ordinary pool, where it may wait behind the host's other work or hang on a
 * silent connection. It only names a kill (cancelled, escalated, moved elsewhere), and is never
 * counted against trust: while the beat waited for it, beats stopped and a healthy agent died as
 * fenced once the window passed. A read still in flight is not started again.
 */
import type { Job } from '../core/job.js';
import type { KillReason } from '../core/run-verdict.js';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';
import { databaseFault } from './database-fault.js';

export interface ClaimWatchOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly job: Job;
  readonly agentSession: number;
  readonly claimEpoch: number;
  readonly kill: (reason: KillReason, why: string) => void;
}

export class ClaimWatch {
  /** When the last beat the database took was sent, on the monotonic clock. */
  lastOkMs: number;
  /** The latest beat's answer: a refusal that comes while a read waits still names its kill. */
  private beatOk = true;
  /** The last beat's error since a beat was taken: the cause a watchdog kill names. */
  private lastError: unknown = null;
  /** When the beat in flight was sent, if one is. */
  private sentAtMs: number | null = null;
  private beating: Promise<void> | null = null;
  private reading: Promise<void> | null = null;

  constructor(private readonly options: ClaimWatchOptions) {
    this.lastOkMs = options.clock.monotonicNowMs();
  }

  /** Heartbeats the claim, unless the last beat has not answered yet. */
  beat(): void {
    this.beating ??= this.sendBeat().finally(() => (this.beating = null));
  }

  /** Why no beat counted for `silentMs`, for the watchdog's kill line. */
  silence(silentMs: number): string {
    const seconds = (silentMs / 1000).toFixed(1);
    let cause: string;
    if (this.sentAtMs !== null) {
      const waited = ((this.options.clock.monotonicNowMs() - this.sentAtMs) / 1000).toFixed(1);
      cause = `a beat sent ${waited} s ago has not answered`;
    } else if (this.lastError !== null) cause = `the database failed: ${databaseFault(this.lastError)}`;
    else cause = 'no beat was sent: this process was too busy to send one';
    return `no claim heartbeat answered for ${seconds} s (${cause})`;
  }

  /** Waits for the beat and the read still in flight, if any. */
  async settled(): Promise<void> {
    await this.beating; // may start a read as it answers
    await this.reading;
  }

  private async sendBeat(): Promise<void> {
    // Trusted from when the beat was sent, not when its answer came: an answer that arrives
    // after a pause of this process (SIGSTOP, a swap storm) vouches only for the time before.
    const sentAtMs = this.options.clock.monotonicNowMs();
    const claim = { key: this.options.job.key, epoch: this.options.claimEpoch };
    const session = this.options.agentSession;
    this.sentAtMs = sentAtMs;
    const hb = await this.options.store.sessions.heartbeat({ session, claim }).then(
      (answer) => answer,
      (error: unknown) => {
        this.lastError = error;
        return null;
      },
    );
    this.sentAtMs = null;
    if (hb === null) return; // The database is unreachable; the trust window decides.
    this.lastError = null;
    this.beatOk = hb.ok;
    if (hb.ok) this.lastOkMs = Math.max(this.lastOkMs, sentAtMs);
    // Read even when the beat was refused: an escalation ends the claim too, and names the kill.
    // Not awaited: the next beat must not wait for it.
    this.reading ??= this.readJob().finally(() => (this.reading = null));
  }

  /** Reads the job and kills for what it shows; a read that fails is left to the next beat. */
  private async readJob(): Promise<void> {
    const job = await this.options.store.jobs.get(this.options.job.id).catch(() => undefined);
    const kill = killFor(this.beatOk, job, this.options.job.epoch);
    if (kill !== null) this.options.kill(kill.reason, kill.why);
  }
}

/** Why an agent must die, from its beat and its job as read (undefined: not read this time). */
function killFor(
  beatOk: boolean,
  job: Job | null | undefined,
  epoch: number,
): { reason: KillReason; why: string } | null {
  // An escalation, a cancel and a close of the task end the claim too: said as what they are.
  if (job?.status === 'escalated') return { reason: 'escalated', why: 'its job was escalated' };
  if (job?.status === 'cancelled') return { reason: 'cancelled', why: 'its job was cancelled' };
  if (!beatOk) return { reason: 'fenced', why: 'its claim heartbeat was refused' };
  if (job === undefined) return null; // read again after the next beat
  if (job === null) return { reason: 'fenced', why: 'its job is gone' };
  if (job.epoch !== epoch) return { reason: 'fenced', why: `its job moved to epoch ${job.epoch}` };
  if (job.status !== 'running') return { reason: 'fenced', why: `its job is ${job.status}` };
  return null;
}
