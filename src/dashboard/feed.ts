/**
 * One poller per dashboard, however many browsers watch: while anyone listens, it asks the
 * database for its change mark (the ledger's newest id, one index probe) every `pollMs`, and
 * tells every listener when it moved. Every write Baton makes appends a ledger row in the same
 * step, so the mark moves with every change, whichever process or host made it.
 */
export class ChangeFeed {
  private readonly listeners = new Set<(mark: number) => void>();
  private timer: NodeJS.Timeout | null = null;
  private last: number | null = null;
  private busy = false;

  constructor(
    private readonly mark: () => Promise<number>,
    private readonly pollMs: number,
  ) {}

  /** Listens until the returned function is called. */
  listen(listener: (mark: number) => void): () => void {
    this.listeners.add(listener);
    if (this.timer === null) {
      this.timer = setInterval(() => void this.poll(), this.pollMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer !== null) {
        clearInterval(this.timer);
        this.timer = null;
        this.last = null;
      }
    };
  }

  private async poll(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const mark = await this.mark();
      if (this.last !== null && mark !== this.last) for (const listener of this.listeners) listener(mark);
      this.last = mark;
    } catch {
      // The database is unreachable for now; the next poll tries again.
    } finally {
      this.busy = false;
    }
  }
}
