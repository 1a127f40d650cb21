/**
 * A real SQLite store in a temp directory for the daemon's fake-clock unit tests, opened on the
 * shared test clock so a test moves the database clock (`moveDb`) apart from the process clock
 * (a FakeClock), and a way to hold a store call's answer back, as a slow network would.
 */
import { sqliteDatabase } from './databases.js';
import { moveClockOf } from './clock.js';
import { openStore } from '../../src/store/open.js';
import { UNSAFE_ENV } from '../../src/store/test-switches.js';
import type { Store } from '../../src/store/store.js';

export interface DaemonFixture {
  readonly url: string;
  readonly store: Store;
  /** Another store on the same database: another process. */
  another(): Promise<Store>;
  /** Moves the database clock of every store on this database. */
  moveDb(ms: number): Promise<void>;
}

export async function daemonFixture(): Promise<DaemonFixture> {
  process.env[UNSAFE_ENV] = '1';
  const db = sqliteDatabase();
  const url = await db.fresh();
  const store = await openStore(url, { unsafeSharedClock: true });
  return {
    url,
    store,
    another: () => openStore(url, { unsafeSharedClock: true }),
    moveDb: (ms) => moveClockOf(db, url, ms),
  };
}

/**
 * Answers of a held call wait until `release` (one answer each) or `open` (all, from then on).
 * The call itself runs on the database at once: only its answer is slow.
 */
export class Hold {
  private held: (() => void)[] = [];
  private waiters: (() => void)[] = [];
  private opened = false;

  constructor(closed = true) {
    this.opened = !closed;
  }

  async pass<T>(answer: T): Promise<T> {
    if (this.opened) return answer;
    await new Promise<void>((resolve) => {
      this.held.push(resolve);
      for (const w of this.waiters.splice(0)) w();
    });
    return answer;
  }

  /** Resolves once an answer is being held. */
  holding(): Promise<void> {
    if (this.held.length > 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    this.held.shift()?.();
  }

  open(): void {
    this.opened = true;
    for (const r of this.held.splice(0)) r();
  }

  close(): void {
    this.opened = false;
  }
}
