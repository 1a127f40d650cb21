/**
 * One poller per dashboard, however many browsers watch: while anyone listens, it asks the
 * database for its change mark (the ledger's newest id, one index probe) every `pollMs`, and
 * tells every listener when it moved. Every write Baton makes appends a ledger row in the same
 * step, so the mark moves with every change, whichever process or host made it.
 */
export class ChangeFeed {
  /** Each listener with the mark it has last been told of (or started from); null until a poll. */
  private readonly listeners = new Map<(mark: number) => void, { seen: number | null }>();
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(
    private readonly mark: () => Promise<number>,
    private readonly pollMs: number,
  ) {}

  /**
   * Listens until the returned function is called. `since` is the mark the listener's view was
   * read at (a page's `data-since`): a change after it, even one made before this call or before
   * the first poll, is told at the next poll. Without it the first poll sets where it starts.
   */
  listen(listener: (mark: number) => void, since?: number): () => void {
    this.listeners.set(listener, { seen: since ?? null });
    if (this.timer === null) {
      this.timer = setInterval(() => void this.poll(), this.pollMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer !== null) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }

  private async poll(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const mark = await this.mark();
      for (const [listener, state] of this.listeners) {
        const moved = state.seen !== null && state.seen !== mark;
        state.seen = mark;
        if (moved) listener(mark);
      }
    } catch {
      // The database is unreachable for now; the next poll tries again.
    } finally {
      this.busy = false;
    }
  }
}
