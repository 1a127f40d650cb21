/**
 * One task, whichever way its accent was typed (decision 0054): `café` with the precomposed é
 * (U+00E9) and with e + U+0301 are one key through the real `baton` command, on both engines,
 * with --db and over HTTP; the names of workspaces, labels and dependencies too. A key that
 * differs in its letters (no accent, another accent) stays a task of its own.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';

type Obj = Record<string, unknown>;

const COMPOSED = 'caf\u00e9';
const DECOMPOSED = 'cafe\u0301';

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: a key in either Unicode spelling, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('café typed two ways is one task: added once, claimed once, held for the other session', async () => {
        const t = cliOn(await db.fresh(), mode);
        const added = await t.json(0, 'task', 'add', DECOMPOSED, '--title', 'decomposed');
        assert.equal(added['key'], COMPOSED, 'stored composed');
        const again = await t.run('task', 'add', COMPOSED, '--title', 'composed');
        assert.equal(again.code, 3, again.stderr);
        assert.match(again.stderr, /^baton: task café already exists/);
        const [first, second] = [await t.session(), await t.session()];
        const claim = await t.json(0, 'claim', DECOMPOSED, '--session', first);
        assert.equal(claim['key'], COMPOSED);
        assert.equal(claim['epoch'], 1);
        const held = await t.json(3, 'claim', COMPOSED, '--session', second);
        assert.equal(held['error'], 'held');
        assert.equal((await t.json(0, 'claim', COMPOSED, '--session', first))['epoch'], 1, 'the same claim');
        const tasks = await t.json<Obj[]>(0, 'task', 'list');
        assert.deepEqual(
          tasks.map((task) => [task['key'], task['title']]),
          [[COMPOSED, 'decomposed']],
        );
        await t.json(0, 'heartbeat', first, '--key', DECOMPOSED, '--epoch', '1');
        await t.json(0, 'release', COMPOSED, '--session', first, '--epoch', '1', '--outcome', 'done');
        assert.equal((await t.json(0, 'task', 'show', DECOMPOSED))['state'], 'done');
      });

      test('a key that differs in its letters is another task (no folding beyond NFC)', async () => {
        const t = cliOn(await db.fresh(), mode);
        for (const key of [COMPOSED, 'cafe', 'caf\u00e8', 'CAF\u00c9', '\ufb01x-1', 'fix-1']) {
          assert.equal((await t.json(0, 'task', 'add', key, '--title', key))['key'], key);
        }
        const [first, second] = [await t.session(), await t.session()];
        await t.json(0, 'claim', DECOMPOSED, '--session', first);
        assert.equal((await t.json(0, 'claim', 'cafe', '--session', second))['epoch'], 1, 'no accent: free');
        assert.equal((await t.json(0, 'claim', 'fix-1', '--session', second))['epoch'], 1, 'not NFKC: free');
        const refused = await t.run('task', 'add', 'cafe\u200b\u0301', '--title', 'zero width');
        assert.equal(refused.code, 2, refused.stderr);
        assert.match(refused.stderr, /U\+200B/);
        assert.equal((await t.json<Obj[]>(0, 'task', 'list')).length, 6, 'nothing added');
      });

      test('names too: a dependency on itself, a workspace and a label, whichever way typed', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', COMPOSED, '--title', 'x', '--label', `l-${DECOMPOSED}`);
        const self = await t.run('task', 'depend', DECOMPOSED, '--on', COMPOSED);
        assert.equal(self.code, 2, self.stderr);
        assert.match(self.stderr, /cannot depend on itself/);
        const labelled = await t.json<Obj[]>(0, 'task', 'list', '--label', `l-${COMPOSED}`);
        assert.deepEqual(
          labelled.map((task) => task['key']),
          [COMPOSED],
        );
        await t.json(0, 'workspace', 'add', 'Zu\u0308rich', '--path', 'test/support');
        const twice = await t.run('workspace', 'add', 'Z\u00fcrich', '--path', 'test/support');
        assert.equal(twice.code, 3, twice.stderr);
        assert.match(twice.stderr, /workspace Zürich already exists/);
        const listed = await t.json<Obj[]>(0, 'workspace', 'list');
        assert.deepEqual(
          listed.map((workspace) => workspace['name']),
          ['Z\u00fcrich'],
        );
      });
    });
  }
