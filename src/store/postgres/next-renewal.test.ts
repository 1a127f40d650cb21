/**
 * `next` and a renewal of the session holding the task it would take over, on a real server
 * (docs/decisions/0058, "A window left on PostgreSQL"). The holder's session is past its TTL; its
 * renewal (a heartbeat's UPDATE of its row) is held open from outside while `next` runs, or
 * commits after `next`'s snapshot was taken and before `next` reaches the holder. Either way the
 * renewed holder keeps its task, and `next` takes the next eligible one instead, without waiting
 * for the renewal. Before the fix, `next` judged the holder on its snapshot alone and took the task.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { Store } from '../store.js';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { waitUntil } from '../../../test/support/wait.js';
import { openPostgresStore } from './postgres-store.js';

const RENEW = 'UPDATE sessions SET heartbeat_at = clock_timestamp() WHERE id = $1';

let url: string;
let store: Store;
let outside: pg.Client;
let holder: number;
let taker: number;
let epoch: number;

beforeEach(async () => {
  url = await freshPostgresUrl();
  store = await openPostgresStore({ url });
  outside = new pg.Client({ connectionString: url });
  await outside.connect();
  holder = (await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 1, ttlMs: 60_000 })).id;
  taker = (await store.sessions.start({ kind: 'agent', host: 'box-2', pid: 2, ttlMs: 600_000 })).id;
  await store.tasks.add({ key: 'HELD' });
  await store.tasks.add({ key: 'FREE' });
  const claim = await store.claims.acquire({ key: 'HELD', session: holder });
  assert.ok(claim.ok);
  epoch = claim.claim.epoch;
  // Silent for ten minutes, with a one-minute TTL: past it, not rescued (no leader runs).
  await outside.query(
    `UPDATE sessions SET heartbeat_at = heartbeat_at - interval '10 minutes' WHERE id = $1`,
    [holder],
  );
});

afterEach(async () => {
  await outside.end();
  await store.close();
});

/** How many other backends of this database wait for a lock. */
async function waiting(client: pg.Client): Promise<number> {
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

/** The holder still holds HELD at its epoch, and its claim was never ended. */
async function holderKeepsTask(): Promise<void> {
  const current = await store.claims.current('HELD');
  assert.equal(current?.session, holder, 'the renewed holder keeps its task');
  assert.equal(current?.epoch, epoch, 'under the same epoch');
  assert.equal((await store.audit.list({ key: 'HELD', type: 'claim:released' })).length, 0, 'no claim ended');
}

test('a renewal in flight keeps the task: next passes over it without waiting and takes the next one', async () => {
  await outside.query('BEGIN');
  await outside.query(RENEW, [holder]);
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<'stuck'>((resolve) => {
    timer = setTimeout(() => resolve('stuck'), 10_000);
  });
  const got = await Promise.race([store.lifecycle.next({ session: taker }), stuck]);
  clearTimeout(timer);
  await outside.query('COMMIT');
  assert.notEqual(got, 'stuck', 'next waited for the renewal');
  assert.equal(got === 'stuck' ? undefined : got?.task.key, 'FREE', 'next took the next eligible task');
  await holderKeepsTask();
});

test('a renewal committed after next read the holder as silent keeps the task', async () => {
  // next waits for its own session's row (held FOR UPDATE outside) after its snapshot is taken.
  await outside.query('BEGIN');
  await outside.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [taker]);
  const next = store.lifecycle.next({ session: taker });
  await waitUntil(async () => (await waiting(outside)) === 1, 30_000, 'next waiting for its session row');
  const renewal = new pg.Client({ connectionString: url });
  await renewal.connect();
  try {
    await renewal.query(`SET lock_timeout = '10s'`);
    await renewal.query(RENEW, [holder]);
  } finally {
    await renewal.end();
  }
  await outside.query('COMMIT');
  const got = await next;
  assert.equal(got?.task.key, 'FREE', 'next took the next eligible task');
  await holderKeepsTask();
});
