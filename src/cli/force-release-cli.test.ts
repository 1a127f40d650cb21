/**
 * `baton force-release` end to end on each engine: it ends another session's claim and says
 * whose; no live claim is exit 4; bad input is exit 2 with one line, and changes nothing.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: baton force-release, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test("ends another session's claim, fencing it, and prints whose it was", async () => {
        const { run, json, session } = cliOn(await db.fresh(), mode);
        assert.equal((await run('task', 'add', 'k')).code, 0);
        const s = await session();
        await json(0, 'claim', 'k', '--session', s);
        const text = await run('force-release', 'k', '--reason', 'gone home');
        assert.equal(text.code, 0, text.stderr);
        assert.match(text.stdout, new RegExp(`^force-released k from session ${s} on .* \\(epoch 1\\)\\n$`));
        const fenced = await run('release', 'k', '--session', s, '--epoch', '1');
        assert.equal(fenced.code, 3, fenced.stderr);
        await json(0, 'claim', 'k', '--session', s);
        const out = await json(0, 'force-release', 'k', '--reason', 'again');
        assert.equal(out['epoch'], 2);
        assert.equal(out['job'], null);
        assert.equal((out['holder'] as Record<string, unknown>)['session'], Number(s));
        const rows = await json<{ type: string }[]>(0, 'audit', '--task', 'k');
        assert.equal(rows.filter((r) => r.type === 'claim:force_released').length, 2);
      });

      test('no live claim exits 4 with no_claim; bad input exits 2; neither writes anything', async () => {
        const { run, json } = cliOn(await db.fresh(), mode);
        assert.equal((await run('task', 'add', 'k')).code, 0);
        const before = (await json<unknown[]>(0, 'audit')).length;
        const none = await run('force-release', 'k', '--reason', 'x', '--json');
        assert.equal(none.code, 4);
        assert.equal((JSON.parse(none.stdout) as Record<string, unknown>)['error'], 'no_claim');
        assert.match(none.stderr, /^baton: k has no live claim — nothing to release/);
        for (const args of [
          ['force-release', 'k'],
          ['force-release', 'k', '--reason', '  '],
          ['force-release', '', '--reason', 'x'],
        ]) {
          const bad = await run(...args);
          assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
          assert.equal(bad.stderr.split('\n').filter(Boolean).length, 1, bad.stderr);
        }
        assert.equal((await run('force-release', 'nope', '--reason', 'x')).code, 4);
        assert.equal((await json<unknown[]>(0, 'audit')).length, before);
      });
    });
  }
