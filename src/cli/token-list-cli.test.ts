/**
 * `baton token list` shows the tokens that may still open the API; `--all` every token, revoked
 * and expired ones too (a run of `baton up` with an API leaves one per job, revoked at its end, so
 * the full list grows with the jobs). `baton token revoke` reads the token it revoked by its id. A
 * revoked token shows who revoked it (`revokedBy`, the `by` of its `token:revoked` row; in the table,
 * `<when> by <who>` in the REVOKED column); a live one null, `-`. A dashboard sign-in shows the
 * token it was made from (`loginOf`; in the table, `sign-in of <id>` under BOUND TO).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { bothEngines, sqliteDatabase } from '../../test/support/databases.js';
import { call, serve } from '../../test/http/support.js';
import { openStore } from '../store/open.js';
import { Tokens } from '../coordinator/tokens.js';

after(stopServers);

interface Listed {
  readonly id: string;
  readonly name: string | null;
  readonly revokedAt: string | null;
  readonly revokedBy: string | null;
}

for (const db of bothEngines()) {
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}, ${mode}: baton token list`, () => {
      test('shows the live tokens; --all the revoked ones too; revoke answers the token', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const gone = await cli.json<{ id: string }>(
          0,
          'token',
          'create',
          '--scope',
          'viewer',
          '--name',
          'gone',
        );
        const kept = await cli.json<{ id: string }>(
          0,
          'token',
          'create',
          '--scope',
          'viewer',
          '--name',
          'kept',
        );
        const revoked = await cli.json<Listed & { revoked: boolean }>(0, 'token', 'revoke', gone.id);
        assert.deepEqual([revoked.id, revoked.name, revoked.revoked], [gone.id, 'gone', true]);
        assert.ok(revoked.revokedAt !== null);
        const live = await cli.json<Listed[]>(0, 'token', 'list');
        assert.deepEqual(
          live.filter((token) => token.name !== null).map((token) => token.name),
          ['kept'],
          'the revoked token is not listed',
        );
        const all = await cli.json<Listed[]>(0, 'token', 'list', '--all');
        // Who revoked it: the `by` of its ledger row (this user@host, or over the API the CLI's token).
        const [row] = await cli.json<{ detail: { by?: string } }[]>(0, 'audit', '--type', 'token:revoked');
        const by = row?.detail.by;
        assert.ok(by !== undefined && by.length > 0, JSON.stringify(row));
        assert.equal(revoked.revokedBy, by);
        assert.deepEqual(
          all
            .filter((token) => token.name !== null)
            .map((token) => [token.name, token.revokedAt !== null, token.revokedBy]),
          [
            ['gone', true, by],
            ['kept', false, null],
          ],
        );
        const text = await cli.run('token', 'list');
        assert.equal(text.code, 0, text.stderr);
        assert.ok(text.stdout.includes(kept.id) && !text.stdout.includes(gone.id), text.stdout);
        const again = await cli.run('token', 'list', '--all');
        const line = (id: string) => again.stdout.split('\n').find((text) => text.startsWith(id)) ?? '';
        assert.ok(line(gone.id).endsWith(` by ${by}`), again.stdout);
        assert.match(line(gone.id), / \d{4}-\d\d-\d\dT[\d:.]+Z by /, again.stdout);
        assert.ok(line(kept.id).endsWith(' -') && !line(kept.id).includes(' by '), again.stdout);
      });
    });
  }
}

test('GET /v1/tokens?all= takes true or false; anything else is 400 and lists nothing', async () => {
  const db = await sqliteDatabase().fresh();
  const cli = cliOn(db);
  const operator = await cli.json<{ token: string }>(0, 'token', 'create', '--scope', 'operator');
  const viewer = await cli.json<{ id: string }>(0, 'token', 'create', '--scope', 'viewer');
  await cli.json(0, 'token', 'revoke', viewer.id);
  const server = await serve(db, ['serve', '--http', '127.0.0.1:0']);
  try {
    const ids = async (query: string) => {
      const answer = await call(server.url, 'GET', `/v1/tokens${query}`, { token: operator.token });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return (answer.body as unknown as Listed[]).map((token) => token.id).includes(viewer.id);
    };
    assert.deepEqual([await ids(''), await ids('?all=false'), await ids('?all=true')], [false, false, true]);
    const bad = await call(server.url, 'GET', '/v1/tokens?all=yes', { token: operator.token });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal((bad.body as { error: { code: string } }).error.code, 'invalid_input');
  } finally {
    await server.stop();
  }
});

for (const mode of cliModes('sqlite')) {
  test(`${mode}: a dashboard sign-in is listed as one, with the token it was made from`, async () => {
    const db = await sqliteDatabase().fresh();
    const cli = cliOn(db, mode);
    const viewer = await cli.json<{ id: string }>(0, 'token', 'create', '--scope', 'viewer');
    const store = await openStore(db);
    try {
      const presented = await store.tokens.get(viewer.id);
      assert.ok(presented !== null);
      const signIn = (await new Tokens(store).signIn(presented)).token;
      const listed = await cli.json<(Listed & { loginOf: string | null })[]>(0, 'token', 'list');
      assert.deepEqual(
        listed
          .filter((token) => token.id === viewer.id || token.id === signIn.id)
          .map((token) => token.loginOf),
        [null, viewer.id],
      );
      const text = await cli.run('token', 'list');
      const line = text.stdout.split('\n').find((row) => row.startsWith(signIn.id)) ?? '';
      assert.match(line, new RegExp(`sign-in of ${viewer.id} +dashboard sign-in`), text.stdout);
    } finally {
      await store.close();
    }
  });
}
