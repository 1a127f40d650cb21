/**
 * The sealer's turn at the write lock (decision 0011, h-seal). SQLite hands its write lock to
 * whoever asks first after a commit, and under a steady load from other processes that is almost
 * always a writer that commits back to back: a process that polls for the lock, however often,
 * finds it free only in the microseconds between two commits. So a writer that has waited asks
 * for its turn with a file beside the database (`<db>-turn`, touched at every try), and every
 * other Baton process's port call looks for that file before it takes the write lock and, while
 * it is fresh, waits (executor.ts) as if the file were locked. The one who asked gets the lock
 * at the next commit, writes, and removes the file.
 *
 * What a writer pays: one `access` system call a transaction while no one asks (no file), a
 * `stat` too while one does. A turn asked and abandoned (the asker died, or its event loop is
 * held) is honoured for TURN_FRESH_MS after its last touch, then ignored.
 */
import { existsSync, statSync, unlinkSync, writeFileSync } from 'node:fs';

/** How long after its last touch a turn is honoured (ms): its asker touches it every try. */
const TURN_FRESH_MS = 100;

export class Turn {
  /** This process asked for the turn and has not written yet: its own calls do not wait for it. */
  private asking = false;

  /** `file`: the turn's file beside the database; null for a database in memory (one process). */
  constructor(private readonly file: string | null) {}

  /** Whether another process asked for the turn: a write that may wait should wait now. */
  askedByAnother(): boolean {
    if (this.file === null || this.asking || !existsSync(this.file)) return false;
    const stat = statSync(this.file, { throwIfNoEntry: false });
    return stat !== undefined && Date.now() - stat.mtimeMs < TURN_FRESH_MS;
  }

  /** Asks for the turn, or says again that it is still wanted (a new mtime). */
  ask(): void {
    if (this.file === null) return;
    this.asking = true;
    writeFileSync(this.file, '', { mode: 0o600 });
  }

  /** The write it was asked for is done (or abandoned). */
  done(): void {
    if (this.file === null || !this.asking) return;
    this.asking = false;
    try {
      unlinkSync(this.file);
    } catch {
      // Removed already, by another asker whose write went first: it asks again if it waits.
    }
  }
}
