/**
 * `baton effect` and `baton effects` end to end: the spawned CLI against a fresh database on
 * each engine. An agent records effects under its claim; once the claim is gone it exits 3 with
 * the holder, and nothing is written.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { batonIn, cliModes, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: baton effect, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      const baton = (url: string, ...args: string[]) => batonIn(mode, url, ...args);
      test('records effects under the live claim and exits 3 with the holder once it is fenced off', async () => {
        const url = await db.fresh();
        assert.equal((await baton(url, 'task', 'add', 'k')).code, 0);
        const a = (await baton(url, 'session', 'start')).stdout.trim();
        const b = (await baton(url, 'session', 'start', '--host', 'box-b')).stdout.trim();
        assert.equal((await baton(url, 'claim', 'k', '--session', a)).code, 0);
        const payload = '{"path":"src/a.ts","sha":"abc123"}';
        const effectArgs = ['effect', 'k', '--session', a, '--epoch', '1', '--kind', 'file-write'];
        const ok = await baton(url, '--json', ...effectArgs, '--payload', payload);
        assert.equal(ok.code, 0, ok.stderr);
        const effect = JSON.parse(ok.stdout) as Record<string, unknown>;
        assert.equal(effect['epoch'], 1);
        assert.deepEqual(effect['payload'], { path: 'src/a.ts', sha: 'abc123' });
        assert.equal((await baton(url, 'release', 'k', '--session', a, '--epoch', '1')).code, 0);
        assert.equal((await baton(url, 'claim', 'k', '--session', b)).code, 0);
        const stale = await baton(url, '--json', ...effectArgs);
        assert.equal(stale.code, 3, stale.stderr);
        assert.match(
          stale.stderr,
          /^baton: the claim on k at epoch 1 is no longer current: it is now held by session/,
        );
        assert.match(stale.stderr, /on box-b/);
        const refusal = JSON.parse(stale.stdout) as Record<string, unknown>;
        assert.equal(refusal['error'], 'fenced');
        const list = JSON.parse((await baton(url, '--json', 'effects', 'k')).stdout) as unknown[];
        assert.equal(list.length, 1, 'the stale effect was not written');
      });

      test('refuses bad input with exit 2 and names what was wrong', async () => {
        const url = await db.fresh();
        const claim = ['--session', '1', '--epoch', '1'];
        const bad = await baton(url, 'effect', 'k', ...claim, '--kind', 'w', '--payload', '{oops');
        assert.equal(bad.code, 2);
        assert.match(bad.stderr, /--payload is not valid JSON/);
        const kind = await baton(url, 'effect', 'k', ...claim, '--kind', 'two words');
        assert.equal(kind.code, 2);
        assert.match(kind.stderr, /effect kind/);
        const missing = await baton(url, 'effect', 'k', ...claim, '--kind', 'w');
        assert.equal(missing.code, 4, missing.stderr);
        // A mistyped key is not a task without effects: one line, exit 4.
        const unknown = await baton(url, 'effects', 'k');
        assert.equal(unknown.code, 4, unknown.stdout);
        assert.equal(unknown.stderr, 'baton: task k not found — add it with `baton task add`\n');
        assert.equal((await baton(url, 'task', 'add', 'k')).code, 0);
        const none = await baton(url, 'effects', 'k');
        assert.deepEqual([none.code, none.stdout], [0, 'no effects\n']);
      });

      test('refuses a pr effect whose url is not http(s), with exit 2, and writes nothing', async () => {
        const url = await db.fresh();
        assert.equal((await baton(url, 'task', 'add', 'k')).code, 0);
        const s = (await baton(url, 'session', 'start')).stdout.trim();
        assert.equal((await baton(url, 'claim', 'k', '--session', s)).code, 0);
        const pr = ['effect', 'k', '--session', s, '--epoch', '1', '--kind', 'pr', '--payload'];
        for (const bad of [
          'javascript:alert(1)',
          'data:text/html,<b>x</b>',
          'file:///etc/passwd',
          'https://a b',
        ]) {
          const refused = await baton(url, ...pr, JSON.stringify({ url: bad }));
          assert.equal(refused.code, 2, `${bad}: ${refused.stderr}`);
          assert.match(
            refused.stderr,
            /^baton: the pr effect's url ".*" is not an http\(s\) address — give /,
          );
          assert.equal(refused.stderr.trim().split('\n').length, 1, 'one line');
        }
        const list = JSON.parse((await baton(url, '--json', 'effects', 'k')).stdout) as unknown[];
        assert.deepEqual(list, [], 'nothing was written');
        const ok = await baton(url, ...pr, '{"url":"https://github.com/acme/api/pull/7"}');
        assert.equal(ok.code, 0, ok.stderr);
        // A task's own url is held to the same rule (core/validate.ts isWebAddress).
        for (const bad of ['javascript:alert(1)', 'file:///etc/passwd', 'https://a b']) {
          const task = await baton(url, 'task', 'add', 'linked', '--url', bad);
          assert.equal(task.code, 2, `${bad}: ${task.stderr}`);
          assert.match(
            task.stderr,
            /^baton: --url must be an http\(s\) address of at most \d+ characters, got /,
          );
        }
        assert.equal((await baton(url, 'task', 'show', 'linked')).code, 4, 'no task was added');
      });
    });
  }
