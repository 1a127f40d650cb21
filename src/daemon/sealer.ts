/**
 * The ledger's background sealer: while this process leads the dispatcher, it signs the settled,
 * unsealed ledger rows into checkpoints every interval (coordinator/ledger/seal.ts), and appends an
 * anchor line per checkpoint to the anchor file when one is configured. It reads the ledger and
 * writes one checkpoint row per few thousand ledger rows: it never touches the hot path's rows or
 * locks. A standby does not seal; a second sealer (`baton audit seal`) at the same time is safe.
 * It never signs over a ledger that lost a checkpoint it sealed or found anchored (seal.ts
 * assertStillHolds): it says so each round instead, and seals again once that checkpoint is back.
 * Nor with a key the ledger retired (retire.ts): found before its first seal or among the rows it
 * is about to seal, the refusal is kept and given again every round, so `baton up` logs it once.
 */
import { EventEmitter } from 'node:events';
import { BatonError } from '../core/errors.js';
import type { Checkpoint } from '../core/ledger.js';
import type { Clock } from '../core/time.js';
import { appendAnchors, anchorOf, newestAnchored } from '../coordinator/ledger/anchor.js';
import type { LedgerSigner } from '../coordinator/ledger/keys.js';
import { assertKeyUsable, sealLedger, type KnownCheckpoint } from '../coordinator/ledger/seal.js';
import { KeyRetiredError } from '../coordinator/ledger/retire.js';
import { newestKnown, type SealedRecord } from '../coordinator/ledger/sealed-record.js';
import type { Store } from '../store/store.js';

/**
 * A round that sealed this many rows found writers at work: the next one comes after BUSY_PAUSE_MS,
 * not the interval, so that under load the unsealed rows stay a fraction of a second's worth
 * (PostgreSQL's horizon settles, each round, what its previous look saw) and the sealing is done
 * beside the writers, not in one long catch-up once they stop. Idle, a round costs a few reads per
 * interval, as before.
 */
const BUSY_ROWS = 1024;
const BUSY_PAUSE_MS = 100;

export interface SealerOptions {
  readonly store: Store;
  readonly signer: LedgerSigner;
  /** Whether this process leads now (LeaderElector.leaderTerm). */
  readonly leading: () => boolean;
  readonly clock: Clock;
  readonly intervalMs: number;
  readonly anchorFile: string | null;
  /** What this key sealed last in this database, beside the key (sealed-record.ts); null: none kept. */
  readonly record?: SealedRecord | null | undefined;
}

export interface SealerEvents {
  sealed: [checkpoints: readonly Checkpoint[]];
  failed: [error: unknown];
}

export class LedgerSealer extends EventEmitter<SealerEvents> {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private keyChecked = false;
  /** Set once the ledger retired this key: a retirement is for good, so no round signs again. */
  private retired: KeyRetiredError | null = null;
  /** Checkpoints sealed whose anchor lines could not be appended yet. */
  private unanchored: Checkpoint[] = [];
  /**
   * The newest checkpoint known outside the database, which it must still hold before this sealer
   * signs anything more: the newer of the anchor file's newest line and the key's record at first,
   * then the last one sealed here. Null while none is known: each round then reads them again, so
   * a line another sealer appended to the file (`baton audit seal --anchor`) is checked too.
   */
  private known: KnownCheckpoint | null = null;

  constructor(private readonly options: SealerOptions) {
    super();
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** One round, whether leading or not: for `baton up`'s last seal and for tests. */
  async sealNow(): Promise<readonly Checkpoint[]> {
    if (this.retired !== null) throw this.retired;
    try {
      return await this.sealRound();
    } catch (error) {
      if (error instanceof KeyRetiredError) this.retired = error;
      throw error;
    }
  }

  private async sealRound(): Promise<readonly Checkpoint[]> {
    if (!this.keyChecked) {
      await assertKeyUsable(this.options.store, this.options.signer);
      this.keyChecked = true;
    }
    const { anchorFile: file, record } = this.options;
    this.known ??= newestKnown(file === null ? null : newestAnchored(file), record?.known() ?? null);
    const follows = this.known === null ? {} : { follows: this.known };
    const { sealed } = await sealLedger(this.options.store, this.options.signer, follows);
    const last = sealed.at(-1);
    let unrecorded: Error | null = null;
    if (last !== undefined) {
      this.known = { seq: last.seq, hash: last.hash, where: 'sealed by this process' };
      try {
        record?.keep(last, this.options.signer.publicKey);
      } catch (error) {
        unrecorded = error instanceof Error ? error : new Error(String(error));
      }
    }
    if (sealed.length > 0) this.emit('sealed', sealed);
    this.anchor(sealed);
    if (unrecorded !== null) throw unrecorded;
    return sealed;
  }

  /**
   * Appends the anchor lines of these checkpoints, and of those a failed append left (a full
   * disk, a folder where the file should be). They wait for the next round that can write them:
   * the checkpoints are committed, and an anchor line written late still vouches for its
   * checkpoint and every one before it.
   */
  private anchor(sealed: readonly Checkpoint[]): void {
    const file = this.options.anchorFile;
    const due = [...this.unanchored, ...sealed];
    if (file === null || due.length === 0) return;
    try {
      appendAnchors(
        file,
        due.map((checkpoint) => anchorOf(checkpoint, this.options.signer.publicKey)),
      );
      this.unanchored = [];
    } catch (error) {
      this.unanchored = due;
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(
        `the ledger is sealed, but ${due.length} anchor line(s) could not be appended to ${file} ` +
          `(${why}); they are appended at the next round that can`,
      );
    }
  }

  private async run(): Promise<void> {
    let pauseMs = this.options.intervalMs;
    while (!this.abort.signal.aborted) {
      await this.options.clock.sleep(pauseMs, this.abort.signal);
      pauseMs = this.options.intervalMs;
      if (this.abort.signal.aborted || !this.options.leading()) continue;
      try {
        const sealed = await this.sealNow();
        const rows = sealed.reduce((total, checkpoint) => total + checkpoint.rowCount, 0);
        if (rows >= BUSY_ROWS) pauseMs = Math.min(BUSY_PAUSE_MS, this.options.intervalMs);
      } catch (error) {
        this.emit('failed', error);
      }
    }
  }
}

/** What `baton up` seals with (UpOptions.ledger): the key, the interval, the anchor file. */
export type LeaderSealing = Omit<SealerOptions, 'store' | 'leading' | 'clock'>;

/** `baton up`'s sealer, while its process leads; its failures are logged once per new message. */
export function startLeaderSealer(
  store: Store,
  ledger: LeaderSealing | null | undefined,
  clock: Clock,
  log: (line: string) => void,
  leading: () => boolean,
): LedgerSealer | null {
  if (ledger === undefined || ledger === null) return null;
  const sealer = new LedgerSealer({ store, clock, leading, ...ledger });
  let lastFailure = '';
  sealer.on('sealed', (sealed) => {
    lastFailure = '';
    const last = sealed.at(-1);
    const rows = sealed.reduce((total, checkpoint) => total + checkpoint.rowCount, 0);
    if (last !== undefined)
      log(`sealed ${rows} ledger rows through row ${last.lastId} (checkpoint ${last.seq})`);
  });
  sealer.on('failed', (error) => {
    const message = error instanceof Error ? error.message : String(error);
    const hint = error instanceof BatonError && error.hint !== undefined ? ` — ${error.hint}` : '';
    if (message !== lastFailure) log(`sealing the ledger failed: ${message}${hint}`);
    lastFailure = message;
  });
  sealer.start();
  return sealer;
}
