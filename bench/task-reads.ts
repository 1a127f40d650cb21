/**
 * The reads of live tasks at scale (docs/decisions/0043): a backlog of `done` done tasks, 100 open
 * and 20 in review, seeded straight in SQL (setup only, never timed), then each read timed 7 times
 * through the store, the median printed: `next` (one claim each time, a session of its own), the
 * unqueued tasks auto-enqueue reads every 2 s, the review queue's lists, and `task list`: its first
 * page and a page from the middle of the done tasks (`after`, docs/decisions/0045).
 *
 * Run alone: `node dist/bench/task-reads.js <new sqlite path | postgres url of an empty database> [done]`.
 */
import Database from 'better-sqlite3';
import { openStore } from '../src/store/open.js';
import type { TaskListParams } from '../src/store/task-list.js';
import type { Store } from '../src/store/store.js';
import { withClient } from './pg-server.js';
import { median, nowMs } from './stats.js';

const REPS = 7;

/** `n` tasks `prefix-1…` in `state`, on either engine. */
async function seed(url: string, prefix: string, state: string, n: number): Promise<void> {
  if (/^postgres(ql)?:\/\//i.test(url)) {
    await withClient(url, async (client) => {
      await client.query(
        `INSERT INTO tasks (key, priority, created_at, state)
         SELECT $1::text || '-' || g, 100, now(), $2::text FROM generate_series(1, $3::int) g`,
        [prefix, state, n],
      );
      await client.query('VACUUM ANALYZE tasks');
    });
    return;
  }
  const db = new Database(url);
  try {
    db.prepare(
      `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @n)
       INSERT INTO tasks (key, priority, created_at, state) SELECT @prefix || '-' || i, 100, @now, @state FROM g`,
    ).run({ n, prefix, state, now: Date.now() });
  } finally {
    db.close();
  }
}

async function timed(name: string, read: () => Promise<unknown>): Promise<void> {
  const runs: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const start = nowMs();
    await read();
    runs.push(nowMs() - start);
  }
  console.log(
    `${name}: median ${median(runs).toFixed(2)} ms (${runs.map((ms) => ms.toFixed(1)).join(', ')})`,
  );
}

async function measure(url: string, done: number): Promise<void> {
  await (await openStore(url)).close();
  await seed(url, 'done', 'done', done);
  await seed(url, 'open', 'open', 100);
  await seed(url, 'review', 'in_review', 20);
  const store: Store = await openStore(url);
  // Keys sort as text: done-5 is about the middle of done-1 … done-999999.
  const middle = `done-${Math.floor(done / 2)}`;
  try {
    const list = (params: TaskListParams) => () => store.tasks.list(params);
    await timed('unqueued tasks (auto-enqueue)', list({ unqueued: true, limit: 100 }));
    await timed('--state in_review (review queue)', list({ state: 'in_review', limit: 500 }));
    await timed('open and gated (review queue)', list({ state: 'open', gated: true, limit: 500 }));
    await timed('--state open', list({ state: 'open' }));
    await timed('task list, no filter', list({}));
    // The pages after the first (docs/decisions/0045): from the middle of the done tasks, and of one state.
    await timed('task list, no filter, --after a middle key', list({ after: middle }));
    await timed('task list --state done', list({ state: 'done' }));
    await timed('task list --state done --after a middle key', list({ state: 'done', after: middle }));
    await timed('task list --limit 50', list({ limit: 50 }));
    const session = await store.sessions.start({
      kind: 'agent',
      host: 'bench',
      pid: process.pid,
      ttlMs: 60_000,
    });
    await timed('next (one claim each)', () => store.lifecycle.next({ session: session.id }));
  } finally {
    await store.close();
  }
}

const [url, done] = process.argv.slice(2);
if (url === undefined) {
  console.error(
    'usage: node dist/bench/task-reads.js <new sqlite path | postgres url of an empty database> [done]',
  );
  process.exit(2);
}
await measure(url, Number(done ?? 1_000_000));
