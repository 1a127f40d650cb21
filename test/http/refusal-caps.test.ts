/**
 * A 403 beyond a live token's scope under a cap (decision 0048, "Loose ends"): a token looping on a
 * forbidden call wrote one ledger row per request. Now one row a minute per token and request, the
 * rest summed up under the token's id when the minute ends; a process-wide limit over all
 * requests, past which one `*` row sums up, but each token's first refusal written even past it.
 * And a 403 whose row cannot be written is still a 403 (it was a 500), with one line on stderr.
 * Both engines; the HTTP app in this process with small caps, on a real store.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { RefusalCap } from '../../src/coordinator/refusal-cap.js';
import { httpApp } from '../../src/http/app.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';

/** POST /v1/tasks with the secret: a viewer's is refused 403. */
const addTask = (app: ReturnType<typeof httpApp>, secret: string, key: string): Promise<Response> =>
  Promise.resolve(
    app.request('http://127.0.0.1/v1/tasks', {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    }),
  );

const refusals = (store: Store) => store.audit.list({ type: 'auth:refused' });

for (const db of bothEngines()) {
  describe(`403s under the cap (${db.name})`, () => {
    test("a looping token: one row, its repeats summed under its id; another token's first past the cap", async () => {
      const store = await openStore(await db.fresh());
      try {
        const caps = { dead: new RefusalCap(), forbidden: new RefusalCap(3, 3_000, true) };
        const app = httpApp({ coordinator: new Coordinator(store, caps), auth: 'reads-open' });
        const looping = await store.tokens.create({ scope: 'viewer', name: 'looping' });
        const other = await store.tokens.create({ scope: 'viewer', name: 'other' });
        const start = Date.now(); // the window starts with the first refusal
        for (let i = 0; i < 5; i += 1) assert.equal((await addTask(app, looping.secret, 'same')).status, 403);
        for (const key of ['x1', 'x2', 'x3'])
          assert.equal((await addTask(app, looping.secret, key)).status, 403);
        assert.equal((await addTask(app, other.secret, 'same')).status, 403);
        assert.ok(Date.now() - start < 3_000, 'the requests took longer than the window');
        assert.deepEqual(
          (await refusals(store)).map((row) => [row.token, row.detail['target']]),
          [
            [looping.token.id, 'add task same'],
            [looping.token.id, 'add task x1'],
            [looping.token.id, 'add task x2'],
            [other.token.id, 'add task same'], // past the limit of 3, but its token's first
          ],
        );
        let rows = await refusals(store);
        for (let waited = 0; rows.length < 6 && waited < 6_000; waited += 100) {
          await sleep(100);
          rows = await refusals(store);
        }
        const summaries = rows.slice(4).map((row) => [row.token, row.detail['token'], row.detail['reason']]);
        assert.equal(summaries.length, 2, JSON.stringify(rows));
        assert.equal(summaries[0]?.[0], looping.token.id);
        assert.match(
          String(summaries[0]?.[2]),
          /^4 more refusals of requests this token was refused within the minute .* between \S+ and \S+ not written$/,
        );
        assert.deepEqual(summaries[1]?.slice(0, 2), [null, '*']);
        assert.match(
          String(summaries[1]?.[2]),
          new RegExp(
            `^1 more refusals beyond a token's scope between .* not written \\(at most 3 rows a minute in one ` +
              `process, each token's first written\\); tokens: ${looping.token.id} ×1$`,
          ),
        );
        // --by-token reads the summary of the token's repeats beside its rows.
        const byToken = await store.audit.list({ token: looping.token.id });
        assert.equal(byToken.length, 4);
        assert.deepEqual(await store.tasks.list({}), [], 'nothing added');
      } finally {
        await store.close();
      }
    });

    test('a 403 whose row the database will not write answers 403, with one line on stderr', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const sql = await rawSql(db, url);
      const lines: string[] = [];
      const write = process.stderr.write.bind(process.stderr);
      try {
        const caps = { dead: new RefusalCap(), forbidden: new RefusalCap() };
        const app = httpApp({ coordinator: new Coordinator(store, caps), auth: 'reads-open' });
        const viewer = await store.tokens.create({ scope: 'viewer' });
        if (db.engine === 'sqlite') {
          await sql.exec(`CREATE TRIGGER fault_refused BEFORE INSERT ON audit_events WHEN NEW.type = 'auth:refused'
            BEGIN SELECT RAISE(ABORT, 'injected fault: the refusal row'); END`);
        } else {
          await sql.exec(`CREATE FUNCTION fault_refused() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected fault: the refusal row'; END $$`);
          await sql.exec(`CREATE TRIGGER fault_refused BEFORE INSERT ON audit_events FOR EACH ROW
            WHEN (NEW.type = 'auth:refused') EXECUTE FUNCTION fault_refused()`);
        }
        process.stderr.write = (chunk: string | Uint8Array): boolean => {
          lines.push(String(chunk));
          return true;
        };
        const answer = await addTask(app, viewer.secret, 'k');
        process.stderr.write = write;
        const body = (await answer.json()) as { error: { code: string } };
        assert.deepEqual([answer.status, body.error.code], [403, 'forbidden']);
        assert.equal(lines.length, 1, lines.join(''));
        assert.match(
          lines[0] ?? '',
          new RegExp(`^baton: auth:refused for token ${viewer.token.id} not written: .*injected fault.*\\n$`),
        );
        await sql.exec(
          db.engine === 'sqlite'
            ? 'DROP TRIGGER fault_refused'
            : 'DROP TRIGGER fault_refused ON audit_events',
        );
        assert.equal((await addTask(app, viewer.secret, 'k')).status, 403);
        assert.equal((await refusals(store)).length, 1, 'the same request written once the row can be');
        assert.deepEqual(await store.tasks.list({}), [], 'nothing added');
      } finally {
        process.stderr.write = write;
        await sql.close();
        await store.close();
      }
    });
  });
}
