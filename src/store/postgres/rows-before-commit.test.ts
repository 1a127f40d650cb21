import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { waitUntil } from '../../../test/support/wait.js';
import { PgExecutor } from './executor.js';
import { RowsBeforeCommitQuery, queryRowsBeforeCommit } from './rows-before-commit.js';

test('a rows-before-commit query sends Flush between Execute and Sync', () => {
  const sent: string[] = [];
  const record = (name: string) => (): void => {
    sent.push(name);
  };
  const connection = {
    parsedStatements: {},
    submittedNamedStatements: {},
    stream: { cork: record('cork'), uncork: record('uncork') },
    parse: record('parse'),
    bind: record('bind'),
    describe: record('describe'),
    execute: record('execute'),
    flush: record('flush'),
    sync: record('sync'),
  };
  const query = new RowsBeforeCommitQuery({ name: 'q', text: 'SELECT $1::int AS n', values: [1] });
  assert.equal((query.submit as (c: unknown) => unknown)(connection), null);
  assert.deepEqual(sent, ['cork', 'parse', 'bind', 'describe', 'execute', 'flush', 'sync', 'uncork']);
});

/**
 * A table whose inserts commit only when the test lets them: a deferred constraint trigger runs
 * at commit, waits for an advisory lock the test holds, and refuses negative ids there.
 */
const GATED_TABLE = `
CREATE TABLE gated (id int PRIMARY KEY);
CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(4242);
  IF NEW.id < 0 THEN RAISE EXCEPTION 'refused at commit'; END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER gated_commit AFTER INSERT ON gated
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gate();`;

/** A fresh database with the gated table, its gate held by the `gate` connection. */
async function withGate(work: (url: string, gate: pg.Client) => Promise<void>): Promise<void> {
  const url = await freshPostgresUrl();
  const gate = new pg.Client({ connectionString: url });
  await gate.connect();
  try {
    await gate.query(GATED_TABLE);
    await gate.query('SELECT pg_advisory_lock(4242)');
    await work(url, gate);
  } finally {
    await gate.end();
  }
}

const count = async (c: pg.Client): Promise<number> =>
  Number((await c.query<{ n: string }>('SELECT count(*) AS n FROM gated')).rows[0]?.n);

const insert = (id: number): pg.QueryConfig => ({
  name: 'ins',
  text: 'INSERT INTO gated VALUES ($1) RETURNING id',
  values: [id],
});

test("an autocommit statement's rows arrive while its commit waits, and it settles after the commit", async () => {
  await withGate(async (url, gate) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      let arrived = false;
      client.connection.on('dataRow', () => (arrived = true));
      let settled = false;
      const rows = queryRowsBeforeCommit<{ id: number }>(client, insert(7)).finally(() => (settled = true));
      await waitUntil(() => arrived, 10_000, 'the rows, sent before the commit');
      assert.equal(await count(gate), 0, 'the commit has not happened yet');
      assert.equal(settled, false, 'nothing is answered before the commit');
      await gate.query('SELECT pg_advisory_unlock(4242)');
      assert.deepEqual(await rows, [{ id: 7 }]);
      assert.equal(await count(gate), 1);
    } finally {
      await gate.query('SELECT pg_advisory_unlock_all()'); // a failed check must not leave the commit waiting
      await client.end();
    }
  });
});

test('PgExecutor.manyRows answers after the commit: a failed commit fails the call, rows arrived or not', async () => {
  await withGate(async (url, gate) => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    let arrived = 0;
    pool.on('connect', (c) => c.connection.on('dataRow', () => arrived++));
    const executor = new PgExecutor(pool, 'test');
    try {
      const refused = assert.rejects(executor.manyRows(insert(-1).text, [-1]), /refused at commit/);
      await waitUntil(() => arrived === 1, 10_000, 'the rows, sent before the commit');
      await gate.query('SELECT pg_advisory_unlock(4242)');
      await refused;
      assert.equal(await count(gate), 0);
      // The connection and its prepared statement stay usable.
      assert.deepEqual(await executor.manyRows(insert(3).text, [3]), [{ id: 3 }]);
      assert.equal(await count(gate), 1);
    } finally {
      await gate.query('SELECT pg_advisory_unlock_all()');
      await pool.end();
    }
  });
});
