/**
 * The dashboard's change feed over a real SQLite store's ledger mark: a listener that says which
 * mark its page was read at hears of a change made before the feed's first poll (the race that left
 * the login test's force-released row on screen when the click came within one poll of connecting).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { sqliteDatabase } from '../support/databases.js';
import { ChangeFeed } from '../../src/dashboard/feed.js';

const POLL_MS = 20;

async function withFeed(
  run: (feed: ChangeFeed, change: () => Promise<number>) => Promise<void>,
): Promise<void> {
  const store = await openStore(await sqliteDatabase().fresh());
  let count = 0;
  const change = async (): Promise<number> => {
    await store.tasks.add({ key: `task-${count++}` });
    return store.observe.auditMaxId();
  };
  try {
    await run(new ChangeFeed(() => store.observe.auditMaxId(), POLL_MS), change);
  } finally {
    await store.close();
  }
}

const told = (feed: ChangeFeed, since?: number) => {
  const marks: number[] = [];
  const stop = feed.listen((mark) => marks.push(mark), since);
  return { marks, stop };
};

const polls = (count: number) => new Promise((resolve) => setTimeout(resolve, POLL_MS * count));

describe('the dashboard change feed', () => {
  test("tells a listener of a change made after its page's mark, even before the first poll", async () => {
    await withFeed(async (feed, change) => {
      const rendered = await change();
      const listener = told(feed, rendered);
      const after = await change();
      await polls(5);
      listener.stop();
      assert.deepEqual(listener.marks, [after]);
    });
  });

  test("tells a listener at once of a change made between its page's render and its connection", async () => {
    await withFeed(async (feed, change) => {
      const rendered = await change();
      const first = told(feed);
      await polls(3);
      const after = await change();
      const late = told(feed, rendered);
      await polls(5);
      first.stop();
      late.stop();
      assert.deepEqual(first.marks, [after]);
      assert.deepEqual(late.marks, [after]);
    });
  });

  test('without a mark, a listener starts from the first poll and hears each later change once', async () => {
    await withFeed(async (feed, change) => {
      await change();
      const listener = told(feed);
      await polls(3);
      assert.deepEqual(listener.marks, []);
      const second = await change();
      await polls(3);
      const third = await change();
      await polls(3);
      listener.stop();
      assert.deepEqual(listener.marks, [second, third]);
    });
  });
});
