/** Builds the conformance Harness for a test database. */
import type { Harness } from '../../src/store/conformance/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { UNSAFE_ENV } from '../../src/store/test-switches.js';
import { moveDatabaseClock } from './clock.js';
import type { TestDatabase } from './databases.js';
import { rawSql } from './raw-sql.js';

export function harnessFor(db: TestDatabase): Harness {
  return {
    name: db.name,
    fresh: async () => {
      // A copy of the migrated template (databases.ts): what `baton init` leaves.
      const url = await db.fresh();
      const store = await openStore(url);
      const raw = await rawSql(db, url);
      // Stores opened with the shared clock are closed here; openAnother's are the test's own.
      const others: Store[] = [];
      const another = async (options = {}): Promise<Store> => {
        const s = await openStore(url, options);
        if (Object.keys(options).length > 0) others.push(s);
        return s;
      };
      return {
        store,
        url,
        raw,
        param: (n) => (db.engine === 'sqlite' ? '?' : `$${n}`),
        openAnother: () => another(),
        clocked: () => {
          // This test process only: the shared clock is refused unless it says so.
          process.env[UNSAFE_ENV] = '1';
          return another({ unsafeSharedClock: true });
        },
        moveClock: (ms) => moveDatabaseClock(raw, db.engine, ms),
        close: async () => {
          await Promise.all(others.map((s) => s.close()));
          await store.close();
          try {
            // The raw connection is the fixture's last: through it, the database may be reset for
            // the next case.
            await db.recycle?.(url, (sql) => raw.exec(sql));
          } finally {
            await raw.close();
          }
        },
      };
    },
  };
}
