/**
 * How many `auth:refused` rows a revoked or expired token presented again may write (decision
 * 0048, review fixes): at most one a minute per token, and at most `limit` a window in this process
 * whatever the tokens, so that whoever holds many dead secrets cannot grow the ledger at the rate
 * of their requests. Past the limit, uses are counted, and one summary row says how many were not
 * written when the window ends. No reset of everything at once: the per-token memory keeps only
 * the tokens written within the last window, at most `limit` of them plus the current window's.
 */

/** Writes the summary row: `dropped` uses between `from` and `to` (ms since the epoch) not written. */
export type SummaryWriter = (dropped: number, from: number, to: number) => Promise<void>;

export class RefusalCap {
  private windowStart = Number.NEGATIVE_INFINITY;
  private written = 0;
  private dropped = 0;
  private summary: SummaryWriter | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly lastByToken = new Map<string, number>();

  constructor(
    readonly limit = 60,
    readonly windowMs = 60_000,
    private readonly log: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
  ) {}

  /**
   * Whether a use of the token `id` now is written: false when this token wrote within the window
   * (not counted) or when the window's limit is reached (counted, summed up by `summary` later).
   */
  admit(id: string, summary: SummaryWriter): boolean {
    const now = Date.now();
    if (now - this.windowStart >= this.windowMs) this.nextWindow(now);
    const last = this.lastByToken.get(id);
    if (last !== undefined && now - last < this.windowMs) return false;
    if (this.written >= this.limit) {
      this.dropped += 1;
      this.summary = summary;
      this.timer ??= setTimeout(() => this.flush(), this.windowStart + this.windowMs - now).unref();
      return false;
    }
    this.written += 1;
    this.lastByToken.set(id, now);
    return true;
  }

  /** The row of `id` could not be written: its next use is not held back by it. */
  failed(id: string): void {
    this.lastByToken.delete(id);
  }

  private nextWindow(now: number): void {
    this.flush();
    for (const [id, at] of this.lastByToken) if (now - at >= this.windowMs) this.lastByToken.delete(id);
    this.windowStart = now;
    this.written = 0;
  }

  /** Writes the summary of the uses not written in the window, if any. */
  private flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const { dropped, summary } = this;
    this.dropped = 0;
    this.summary = null;
    if (dropped === 0 || summary === null) return;
    const from = this.windowStart;
    summary(dropped, from, Math.min(Date.now(), from + this.windowMs)).catch((error: unknown) =>
      this.log(
        `baton: the auth:refused summary (${dropped} uses not written) was not written: ${String(error)}`,
      ),
    );
  }
}
