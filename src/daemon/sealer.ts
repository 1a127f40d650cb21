/**
 * The ledger's background sealer: while this process leads the dispatcher, it signs the settled,
 * unsealed ledger rows into checkpoints every interval (coordinator/ledger/seal.ts), and appends an
 * anchor line per checkpoint to the anchor file when one is configured. It reads the ledger and
 * writes one checkpoint row per few thousand ledger rows: it never touches the hot path's rows or
 * locks. A standby does not seal; a second sealer (`baton audit seal`) at the same time is safe.
 */
import { EventEmitter } from 'node:events';
import type { Checkpoint } from '../core/ledger.js';
import type { Clock } from '../core/time.js';
import { appendAnchors, anchorOf } from '../coordinator/ledger/anchor.js';
import type { LedgerSigner } from '../coordinator/ledger/keys.js';
import { assertKeyRegistered, sealLedger } from '../coordinator/ledger/seal.js';
import type { Store } from '../store/store.js';

export interface SealerOptions {
  readonly store: Store;
  readonly signer: LedgerSigner;
  /** Whether this process leads now (LeaderElector.leaderTerm). */
  readonly leading: () => boolean;
  readonly clock: Clock;
  readonly intervalMs: number;
  readonly anchorFile: string | null;
}

export interface SealerEvents {
  sealed: [checkpoints: readonly Checkpoint[]];
  failed: [error: unknown];
}

export class LedgerSealer extends EventEmitter<SealerEvents> {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private keyChecked = false;

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
    if (!this.keyChecked) {
      await assertKeyRegistered(this.options.store, this.options.signer);
      this.keyChecked = true;
    }
    const { sealed } = await sealLedger(this.options.store, this.options.signer);
    if (this.options.anchorFile !== null) {
      appendAnchors(
        this.options.anchorFile,
        sealed.map((checkpoint) => anchorOf(checkpoint, this.options.signer.publicKey)),
      );
    }
    if (sealed.length > 0) this.emit('sealed', sealed);
    return sealed;
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      await this.options.clock.sleep(this.options.intervalMs, this.abort.signal);
      if (this.abort.signal.aborted || !this.options.leading()) continue;
      try {
        await this.sealNow();
      } catch (error) {
        this.emit('failed', error);
      }
    }
  }
}
