/**
 * How many `auth:refused` rows one process writes (decision 0048, review fixes and loose ends), so
 * that whoever holds dead secrets, or a live token looping on a forbidden call, cannot grow the
 * ledger at the rate of their requests. Each refusal has a key (what repeats: the token for a dead
 * token presented again; the token, route and target for a 403): a key writes at most one row a
 * window, and the process at most `limit` a window whatever the keys. Uses not written are counted:
 * when the window ends (or the process stops: `flush`), one row per token sums up its repeats,
 * and one row (token `*`) the uses past the limit. With `firstFree`, a token's first refusal in a
 * window is written even past the limit: one token's flood cannot hide another's refusals (for
 * live tokens, whose number only operators and runners make; `admit` may ask it for one refusal, as
 * for a token a person revoked). No reset of everything at once: the
 * memory keeps only what was written within the last window.
 */

/** What a window did not write: by token, between `from` and `to` (ms since the epoch). */
export interface CapSummary {
  readonly from: number;
  readonly to: number;
  /** Uses of a key that wrote its row within the window, by token. */
  readonly repeated: ReadonlyMap<string, number>;
  /** Uses past the process-wide limit, by token. */
  readonly dropped: ReadonlyMap<string, number>;
}

/** Writes the summary rows of a window. */
export type SummaryWriter = (summary: CapSummary) => Promise<void>;

const bump = (counts: Map<string, number>, token: string): void =>
  void counts.set(token, (counts.get(token) ?? 0) + 1);

export class RefusalCap {
  private windowStart = Number.NEGATIVE_INFINITY;
  private written = 0;
  private repeated = new Map<string, number>();
  private dropped = new Map<string, number>();
  private summary: SummaryWriter | null = null;
  private timer: NodeJS.Timeout | null = null;
  private pending: Promise<void> = Promise.resolve();
  private readonly lastByKey = new Map<string, number>();
  private readonly lastByToken = new Map<string, number>();
  /** The key of each token's first row in the window, until the window ends. */
  private readonly firstKey = new Map<string, string>();

  constructor(
    readonly limit = 60,
    readonly windowMs = 60_000,
    private readonly firstFree = false,
    private readonly log: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
  ) {}

  /**
   * Whether a refusal of `token` keyed `key` is written now: false when that key wrote within the
   * window, or when the window's limit is reached and this is not the token's first (both counted);
   * `firstFree` (the cap's own by default) says whether a token's first is written past the limit.
   */
  admit(token: string, key: string, summary: SummaryWriter, firstFree = this.firstFree): boolean {
    const now = Date.now();
    if (now - this.windowStart >= this.windowMs) this.nextWindow(now);
    const last = this.lastByKey.get(key);
    const wroteRecently = (at: number | undefined): boolean => at !== undefined && now - at < this.windowMs;
    if (wroteRecently(last)) return this.hold(this.repeated, token, summary, now);
    const first = !wroteRecently(this.lastByToken.get(token));
    if (this.written >= this.limit && !(firstFree && first))
      return this.hold(this.dropped, token, summary, now);
    this.written += 1;
    if (first) this.firstKey.set(token, key);
    this.lastByKey.set(key, now);
    this.lastByToken.set(token, now);
    return true;
  }

  /**
   * The row of `token` keyed `key` could not be written: its next use is not held back by it, and
   * when it was the token's first of the window, the token's next refusal is its first again.
   */
  failed(token: string, key: string): void {
    this.lastByKey.delete(key);
    if (this.firstKey.get(token) !== key) return;
    this.firstKey.delete(token);
    this.lastByToken.delete(token);
  }

  /** Writes the summary of the window's uses not written, if any (a stopping process calls it). */
  flush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const { repeated, dropped, summary } = this;
    this.repeated = new Map();
    this.dropped = new Map();
    this.summary = null;
    if (summary !== null && (repeated.size > 0 || dropped.size > 0)) {
      const from = this.windowStart;
      const to = Math.min(Date.now(), from + this.windowMs);
      const count = [...repeated.values(), ...dropped.values()].reduce((sum, uses) => sum + uses, 0);
      const written = summary({ from, to, repeated, dropped }).catch((error: unknown) =>
        this.log(
          `baton: the auth:refused summary (${count} uses not written) was not written: ${String(error)}`,
        ),
      );
      this.pending = this.pending.then(() => written);
    }
    return this.pending;
  }

  private hold(counts: Map<string, number>, token: string, summary: SummaryWriter, now: number): false {
    bump(counts, token);
    this.summary = summary;
    this.timer ??= setTimeout(() => void this.flush(), this.windowStart + this.windowMs - now).unref();
    return false;
  }

  private nextWindow(now: number): void {
    void this.flush();
    for (const memory of [this.lastByKey, this.lastByToken])
      for (const [id, at] of memory) if (now - at >= this.windowMs) memory.delete(id);
    for (const token of this.firstKey.keys()) if (!this.lastByToken.has(token)) this.firstKey.delete(token);
    this.windowStart = now;
    this.written = 0;
  }
}
