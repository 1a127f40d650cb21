import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../../test/support/databases.js';
import { harnessFor } from '../../test/support/harness.js';
import { exerciseStore } from './conformance/index.js';
import { openStore } from './open.js';
import { timedStore } from './timed.js';

// The timed store is the same store: the whole conformance suite passes through it.
const inner = harnessFor(sqliteDatabase());
let calls = 0;
exerciseStore({
  name: 'sqlite, timed',
  fresh: async () => {
    const f = await inner.fresh();
    return { ...f, store: timedStore(f.store, () => calls++) };
  },
});

test('reports each call with its method, its duration and whether it threw', async () => {
  const seen: [string, number, boolean][] = [];
  const store = timedStore(await openStore(await sqliteDatabase().fresh()), (m, s, failed) =>
    seen.push([m, s, failed]),
  );
  try {
    await store.tasks.add({ key: 'a' });
    await assert.rejects(store.tasks.add({ key: 'a' }));
    await store.now();
    assert.deepEqual(
      seen.map(([m, , failed]) => [m, failed]),
      [
        ['tasks.add', false],
        ['tasks.add', true],
        ['now', false],
      ],
    );
    assert.ok(seen.every(([, seconds]) => seconds >= 0));
    assert.equal(store.engine, 'sqlite');
    assert.ok(calls > 0, 'the conformance suite went through the timed store');
  } finally {
    await store.close();
  }
});
