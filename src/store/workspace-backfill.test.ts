/**
 * Migration 0003 run on a database of the old schema: the database is created with migrations
 * up to 2 only, filled with raw SQL covering every case of the backfill rule, and then opened
 * normally, which applies 0003. requires_filesystem is checked row by row, on both engines.
 * The rule and its reading: docs/decisions/0003-requires-filesystem-backfill.md.
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

/** Raw SQL written with $n placeholders, each used once and in order; times as the engine stores them. */
function oldSchema(db: TestDatabase, raw: RawSql) {
  const time = (offsetMs = 0): unknown => (db.engine === 'sqlite' ? T0 + offsetMs : new Date(T0 + offsetMs));
  const exec = (sql: string, params: readonly unknown[] = []) =>
    raw.exec(db.engine === 'sqlite' ? sql.replace(/\$\d+/g, '?') : sql, params);
  const id = async (sql: string, params: readonly unknown[]): Promise<number> =>
    Number((await exec(`${sql} RETURNING id`, params))[0]?.['id']);
  const session = (): Promise<number> =>
    id(
      `INSERT INTO sessions (kind, host, pid, started_at, heartbeat_at) VALUES ('agent', 'box', 1, $1, $2)`,
      [time(), time()],
    );
  const task = (key: string, assignee: string | null): Promise<number> =>
    id(`INSERT INTO tasks (key, assignee, created_at) VALUES ($1, $2, $3)`, [key, assignee, time()]);
  /** A claim at `epoch`: live (holding the task) when outcome is null, else ended with it. */
  const claim = async (taskId: number, sessionId: number, epoch: number, outcome: string | null) => {
    await exec(
      `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        taskId,
        sessionId,
        epoch,
        time(epoch),
        time(epoch),
        outcome === null ? null : time(epoch + 1),
        outcome,
      ],
    );
    const holder = outcome === null ? sessionId : null;
    await exec(`UPDATE tasks SET epoch = $1, holder_session_id = $2, claimed_at = $3 WHERE id = $4`, [
      epoch,
      holder,
      holder === null ? null : time(epoch),
      taskId,
    ]);
  };
  const job = (taskId: number, status: string, sessionId: number | null) =>
    exec(
      `INSERT INTO jobs (task_id, status, priority, queued_at, session_id, epoch, attempt)
       VALUES ($1, $2, 100, $3, $4, $5, $6)`,
      [taskId, status, time(), sessionId, status === 'queued' ? 0 : 1, status === 'queued' ? 0 : 1],
    );
  return { exec, session, task, claim, job };
}

/** Each case: a task of the old schema, and the requires_filesystem the backfill must give it. */
async function givenOldTasks(db: TestDatabase, raw: RawSql): Promise<ReadonlyMap<string, boolean>> {
  const o = oldSchema(db, raw);
  const s = await o.session();
  const expected = new Map<string, boolean>();
  const add = async (key: string, assignee: string | null, want: boolean): Promise<number> => {
    expected.set(key, want);
    return o.task(key, assignee);
  };
  // In flight: any assignee, or none.
  await o.claim(await add('live-claim/writer', 'writer', true), s, 1, null);
  await o.job(await add('running/unassigned', null, true), 'running', s);
  await o.job(await add('job-claimed/writer', 'writer', true), 'claimed', s);
  // Queued: a queued job; only an engineering assignee counts.
  await o.job(await add('queued/backend-engineer', 'backend-engineer', true), 'queued', null);
  await o.job(await add('queued/writer', 'writer', false), 'queued', null);
  await o.job(await add('queued/unassigned', null, false), 'queued', null);
  // Backlog: no job ever, no live claim, and not ended done or failed by its newest claim.
  await add('backlog/CTO', 'CTO', true);
  await add('backlog/SRE-oncall', 'SRE-oncall', true);
  await add('backlog/designer', 'designer', false);
  await add('backlog/unassigned', null, false);
  await o.claim(await add('released/devops-bot', 'devops-bot', true), s, 1, 'released');
  await o.claim(await add('abandoned/developer', 'developer', true), s, 1, 'abandoned');
  const reopened = await add('done-then-released/engineer', 'engineer', true);
  await o.claim(reopened, s, 1, 'done');
  await o.claim(reopened, s, 2, 'released');
  // Ended: the newest claim says done or failed, or the task's jobs all ended.
  await o.claim(await add('done/engineer', 'engineer', false), s, 1, 'done');
  await o.claim(await add('failed/engineer', 'engineer', false), s, 1, 'failed');
  await o.job(await add('job-done/engineer', 'engineer', false), 'done', s);
  await o.job(await add('job-cancelled/sre', 'sre', false), 'cancelled', null);
  await o.job(await add('job-failed/devops', 'devops', false), 'failed', s);
  return expected;
}

for (const db of allDatabases()) {
  describe(`migration 0003 on a ${db.name} database of the old schema`, () => {
    test('backfills requires_filesystem only on positive evidence, row by row', async () => {
      const url = await db.empty();
      await (await open(db, url, 2)).close();
      const raw = await rawSql(db, url);
      let store: Store | undefined;
      try {
        const versions = (await raw.exec('SELECT version FROM schema_migrations')).map((r) =>
          Number(r['version']),
        );
        assert.ok(!versions.includes(3), `old schema at versions ${versions.join(', ')}`);
        const expected = await givenOldTasks(db, raw);
        store = await open(db, url);
        const actual = new Map<string, boolean>();
        for (const key of expected.keys()) {
          const requirements = await store.workspaceTasks.get(key);
          assert.equal(requirements?.workspace, null, key);
          actual.set(key, requirements?.requiresFilesystem ?? false);
        }
        assert.deepEqual(Object.fromEntries(actual), Object.fromEntries(expected));
        assert.deepEqual(await store.workspaces.list(), []);
        assert.deepEqual(await store.agents.list(), []);
      } finally {
        await store?.close();
        await raw.close();
      }
    });
  });
}
