/** Builds the conformance Harness for a test database. */
import type { Harness } from '../../src/store/conformance/index.js';
import { openStore } from '../../src/store/open.js';
import type { TestDatabase } from './databases.js';
import { rawSql } from './raw-sql.js';

export function harnessFor(db: TestDatabase): Harness {
  return {
    name: db.name,
    fresh: async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const raw = await rawSql(db, url);
      const others: { close(): Promise<void> }[] = [];
      return {
        store,
        url,
        raw,
        param: (n) => (db.engine === 'sqlite' ? '?' : `$${n}`),
        openAnother: async () => {
          const s = await openStore(url);
          others.push(s);
          return s;
        },
        close: async () => {
          await raw.close();
          await store.close();
        },
      };
    },
  };
}
