/**
 * PostgreSQL commits sequence ids out of order: a row can become visible below one already seen.
 * `ledger.unsealed` must never hand out a row while a ledger writer that may still commit below it
 * is in flight, and must not wait for transactions that write no ledger row.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { rowId } from '../../core/ledger.js';
import { postgresDatabase, postgresServers } from '../../../test/support/databases.js';
import { openStore } from '../open.js';
import { PgExecutor } from './executor.js';
import { LedgerHorizon } from './ledger-horizon.js';

for (const server of postgresServers()) {
  void describe(`ledger horizon on ${server.name}`, () => {
    test('hands out no row while a writer with a lower id is in flight, and every row once it commits', async () => {
      const url = await postgresDatabase(server).fresh();
      const store = await openStore(url);
      const writer = new pg.Client({ connectionString: url });
      const reader = new pg.Client({ connectionString: url });
      await writer.connect();
      await reader.connect();
      try {
        await store.tasks.add({ key: 'before' });
        await writer.query('BEGIN');
        const { rows } = await writer.query<{ id: string }>(
          `INSERT INTO audit_events (at, type, detail) VALUES (now(), 'task:added', '{}') RETURNING id`,
        );
        const inFlight = Number(rows[0]?.id);
        await store.tasks.add({ key: 'after' });
        const later = (await store.audit.list()).at(-1)?.id ?? 0;
        assert.ok(later > inFlight, 'the later row has the higher id and is committed');
        // A reader holding a transaction open writes no ledger row: it is not waited for.
        await reader.query('BEGIN');
        await reader.query('SELECT count(*) FROM audit_events');
        const waiting = await store.ledger.unsealed({ limit: 100, settleTimeoutMs: 300 });
        assert.ok(
          waiting.rows.every((r) => rowId(r) < inFlight),
          `no row at or above ${inFlight} while it is in flight: ${waiting.rows.map(rowId).join(',')}`,
        );
        await writer.query('COMMIT');
        const settled = await store.ledger.unsealed({ limit: 100, settleTimeoutMs: 5_000 });
        const ids = settled.rows.map(rowId);
        assert.ok(
          ids.includes(inFlight) && ids.includes(later),
          `both rows once committed: ${ids.join(',')}`,
        );
        await reader.query('COMMIT');
      } finally {
        await writer.end();
        await reader.end();
        await store.close();
      }
    });

    test('audit.settled stays below a writer in flight, at once, and passes it once it commits', async () => {
      const url = await postgresDatabase(server).fresh();
      const store = await openStore(url);
      const writer = new pg.Client({ connectionString: url });
      await writer.connect();
      try {
        await store.tasks.add({ key: 'before' });
        const before = await store.audit.settled();
        await writer.query('BEGIN');
        const { rows } = await writer.query<{ id: string }>(
          `INSERT INTO audit_events (at, type, detail) VALUES (now(), 'task:added', '{}') RETURNING id`,
        );
        const inFlight = Number(rows[0]?.id);
        await store.tasks.add({ key: 'after' });
        // Asked again and again (a follower's polls), it answers at once and never reaches the writer's id.
        for (let look = 0; look < 5; look++) {
          const settled = await store.audit.settled();
          assert.ok(
            settled >= before && settled < inFlight,
            `settled ${settled} while ${inFlight} is in flight`,
          );
        }
        await writer.query('COMMIT');
        const later = (await store.audit.list()).at(-1)?.id ?? 0;
        let settled = 0;
        // A follower's answer may be up to 250 ms old (settledNow): asked for two seconds.
        for (let look = 0; look < 40 && settled < later; look++) {
          settled = await store.audit.settled();
          if (settled < later) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.equal(settled, later, 'every row settles once the writer has ended');
      } finally {
        await writer.end();
        await store.close();
      }
    });

    test('waits for no writer of another database on the server, whose audit_events has the same oid', async () => {
      const url = await postgresDatabase(server).fresh();
      const elsewhere = await postgresDatabase(server).fresh();
      const store = await openStore(url);
      const writer = new pg.Client({ connectionString: elsewhere });
      await writer.connect();
      try {
        const oid = `SELECT 'audit_events'::regclass::oid AS oid`;
        const reader = new pg.Client({ connectionString: url });
        await reader.connect();
        const here = (await reader.query<{ oid: number }>(oid).finally(() => reader.end())).rows[0]?.oid;
        assert.equal((await writer.query<{ oid: number }>(oid)).rows[0]?.oid, here, 'one oid in both');
        await writer.query('BEGIN');
        await writer.query(`INSERT INTO audit_events (at, type, detail) VALUES (now(), 'task:added', '{}')`);
        await store.tasks.add({ key: 'here' });
        const newest = (await store.audit.list()).at(-1)?.id ?? 0;
        assert.equal(
          await store.audit.settled(),
          newest,
          'settled at once, the other database notwithstanding',
        );
        await writer.query('ROLLBACK');
      } finally {
        await writer.end();
        await store.close();
      }
    });

    test('followers polling at once share one look at pg_locks per 250 ms, however many they are', async () => {
      const url = await postgresDatabase(server).fresh();
      await (await openStore(url)).close(); // migrated
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      const exec = new PgExecutor(pool, 'test');
      let looks = 0;
      const rows = exec.rows.bind(exec);
      exec.rows = (sql, params) => {
        if (sql.includes('pg_locks')) looks++;
        return rows(sql, params);
      };
      const horizon = new LedgerHorizon(exec);
      try {
        // 20 followers, each asking every 25 ms (ten times a follower's pace) for one second.
        const started = performance.now();
        const follower = async (): Promise<void> => {
          while (performance.now() - started < 1_000) {
            await horizon.settledNow();
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
        };
        await Promise.all(Array.from({ length: 20 }, follower));
        assert.ok(looks >= 1 && looks <= 6, `${looks} looks at pg_locks in a second`);
      } finally {
        await pool.end();
      }
    });
  });
}
