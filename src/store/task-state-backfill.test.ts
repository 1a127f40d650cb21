/**
 * Migration 0012 run on a database of the old schema, on every engine: the database is made with
 * migrations up to 11, filled with raw SQL covering every case of the rule (docs/decisions/0010),
 * and opened normally, which applies 0012. Each task's state, when and by whom it was reached,
 * its ledger row, and the new CHECKs (a job may end escalated, a claim expire) are checked.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { allDatabases, type TestDatabase } from '../../test/support/databases.js';
import { rawSql, type RawSql } from '../../test/support/raw-sql.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);

function open(db: TestDatabase, url: string, migrateTo?: number): Promise<Store> {
  const options = migrateTo === undefined ? {} : { migrateTo };
  return db.engine === 'sqlite'
    ? Promise.resolve(openSqliteStore({ path: url, ...options }))
    : openPostgresStore({ url, ...options });
}

/** Raw SQL of the old schema with $n placeholders, each used once and in order. */
function oldSchema(db: TestDatabase, raw: RawSql) {
  const time = (s: number): unknown => (db.engine === 'sqlite' ? T0 + s * 1000 : new Date(T0 + s * 1000));
  const exec = (sql: string, params: readonly unknown[] = []) =>
    raw.exec(db.engine === 'sqlite' ? sql.replace(/\$\d+/g, '?') : sql, params);
  const id = async (sql: string, params: readonly unknown[]): Promise<number> =>
    Number((await exec(`${sql} RETURNING id`, params))[0]?.['id']);
  const session = (): Promise<number> =>
    id(
      `INSERT INTO sessions (kind, host, pid, started_at, heartbeat_at) VALUES ('agent', 'box', 1, $1, $2)`,
      [time(0), time(0)],
    );
  const task = (key: string): Promise<number> =>
    id(`INSERT INTO tasks (key, created_at) VALUES ($1, $2)`, [key, time(0)]);
  /** A claim at `epoch`, released at second `at` with the outcome, or live (null). */
  const claim = async (taskId: number, s: number, epoch: number, outcome: string | null, at: number) => {
    const released = outcome === null ? null : time(at);
    await exec(
      `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [taskId, s, epoch, time(at - 1), time(at - 1), released, outcome],
    );
    const holder = outcome === null ? s : null;
    await exec(`UPDATE tasks SET epoch = $1, holder_session_id = $2, claimed_at = $3 WHERE id = $4`, [
      epoch,
      holder,
      holder === null ? null : time(at - 1),
      taskId,
    ]);
  };
  /** A job ended with `status` at second `at` (null: still active). */
  const job = (taskId: number, status: string, at: number | null) =>
    id(
      `INSERT INTO jobs (task_id, status, priority, queued_at, finished_at, epoch, attempt)
       VALUES ($1, $2, 100, $3, $4, 1, 1)`,
      [taskId, status, time(0), at === null ? null : time(at)],
    );
  return { session, task, claim, job };
}

interface Expected {
  readonly state: 'open' | 'done';
  /** The state's time in seconds after T0, and who reached it. */
  readonly at: number;
  readonly by: string | null;
}

/** Each case: a task of the old schema and the state the backfill must give it. */
async function givenOldTasks(db: TestDatabase, raw: RawSql): Promise<Map<string, Expected>> {
  const o = oldSchema(db, raw);
  const s = await o.session();
  const expected = new Map<string, Expected>();
  const open = (key: string) => expected.set(key, { state: 'open', at: 0, by: null });
  const done = (key: string, at: number, by: string) => expected.set(key, { state: 'done', at, by });
  open('never-touched');
  await o.task('never-touched');
  let t = await o.task('claim-done');
  await o.claim(t, s, 1, 'done', 10);
  done('claim-done', 10, `session ${s}`);
  t = await o.task('job-done');
  let j = await o.job(t, 'done', 20);
  done('job-done', 20, `job ${j}`);
  t = await o.task('job-done-then-claim-done');
  j = await o.job(t, 'done', 30);
  await o.claim(t, s, 1, 'done', 31);
  done('job-done-then-claim-done', 31, `session ${s}`);
  t = await o.task('done-then-failed');
  await o.claim(t, s, 1, 'done', 40);
  await o.job(t, 'failed', 41);
  open('done-then-failed');
  t = await o.task('failed-then-done');
  await o.job(t, 'oom_killed', 50);
  await o.claim(t, s, 1, 'done', 51);
  done('failed-then-done', 51, `session ${s}`);
  t = await o.task('done-then-released');
  await o.claim(t, s, 1, 'done', 60);
  await o.claim(t, s, 2, 'released', 61);
  done('done-then-released', 60, `session ${s}`);
  t = await o.task('done-but-queued-again');
  await o.job(t, 'done', 70);
  await o.job(t, 'queued', null);
  open('done-but-queued-again');
  t = await o.task('done-but-claimed-again');
  await o.claim(t, s, 1, 'done', 80);
  await o.claim(t, s, 2, null, 81);
  open('done-but-claimed-again');
  t = await o.task('only-cancelled-and-abandoned');
  await o.job(t, 'cancelled', 90);
  await o.claim(t, s, 1, 'abandoned', 91);
  open('only-cancelled-and-abandoned');
  return expected;
}

for (const db of allDatabases()) {
  describe(`migration 0012 on a ${db.name} database of the old schema`, () => {
    test('puts every task in the state its jobs and claims imply, with when, by whom and a ledger row', async () => {
      const url = await db.empty();
      await (await open(db, url, 11)).close();
      const raw = await rawSql(db, url);
      let store: Store | undefined;
      try {
        const expected = await givenOldTasks(db, raw);
        store = await open(db, url);
        for (const [key, want] of expected) {
          const task = await store.tasks.get(key);
          assert.equal(task?.state, want.state, key);
          assert.equal(task?.stateBy, want.by, key);
          assert.equal(task?.stateAt, T0 + want.at * 1000, key);
          const rows = await store.audit.list({ key, type: 'task:state' });
          const row =
            want.state === 'done' ? [{ from: 'open', to: 'done', action: 'backfill', by: want.by }] : [];
          assert.deepEqual(
            rows.map((r) => r.detail),
            row,
            key,
          );
        }
        const s = await store.sessions.get(1);
        assert.equal(s?.ttlMs, null, 'an existing session declared no TTL');
        // The rebuilt tables keep their data, constraints and triggers: the queue still works.
        const { job } = await store.jobs.enqueue({ key: 'never-touched' });
        const worker = await store.sessions.start({ kind: 'agent', host: 'box', pid: 2 });
        assert.equal((await store.jobs.claimNext({ session: worker.id }))?.key, 'done-but-queued-again');
        const escalated = await store.lifecycle.escalate({
          key: 'never-touched',
          reason: 'r',
          by: { name: 'x' },
        });
        assert.ok(escalated.ok);
        assert.equal((await store.jobs.get(job.id))?.status, 'escalated');
        await assert.rejects(raw.exec(`UPDATE jobs SET status = 'lost' WHERE id = ${job.id}`));
      } finally {
        await store?.close();
        await raw.close();
      }
    });
  });
}
