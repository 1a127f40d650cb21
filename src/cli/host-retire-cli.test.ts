/**
 * `baton host retire <name>` (the ops walk's laptop host, brought over by `baton db copy`, paged
 * for ever): refused with one line and exit 3 while its `baton up` serves it, then gone from
 * `baton hosts`, `baton status` and the ledger says who; an unknown name exits 4. A disable of a
 * host no `baton up` serves says `disabled`, the word `baton hosts` shows. Both engines, --db and HTTP.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../store/open.js';
import { givenHost } from '../store/conformance/dispatch.js';
import { stopServers } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

describeCli('baton host retire', ({ setup }) => {
  test('refused while served, then forgotten; a disable of an unserved host says what baton hosts says', async () => {
    const t = await setup();
    const store = await openStore(t.db, { intent: 'use' });
    try {
      const { session } = await givenHost(store, 'laptop');
      const served = assertOneErrorLine(await t.run('host', 'retire', 'laptop'), 3, 'retire a served host');
      assert.match(served, /host laptop is served by a live baton up.*stop its baton up/);
      await store.sessions.end(session.id);
    } finally {
      await store.close();
    }
    const off = await t.run('host', 'disable', 'laptop');
    assert.deepEqual([off.code, off.stdout], [0, 'host laptop disabled\n']);
    const [shown] = await t.json<{ name: string }[]>(0, 'hosts');
    assert.equal(shown?.name, 'laptop');
    assert.match((await t.run('hosts')).stdout, /^laptop\s+disabled\s/m);
    const done = await t.run('host', 'retire', 'laptop');
    assert.deepEqual(
      [done.code, done.stdout, done.stderr],
      [0, 'host laptop retired: `baton up --host laptop` registers it again\n', ''],
    );
    assert.deepEqual(await t.json(0, 'hosts'), []);
    assert.doesNotMatch((await t.run('status')).stdout, /laptop/);
    assert.equal(await t.count('audit', '--type', 'host:retired'), 1);
    assertOneErrorLine(await t.run('host', 'retire', 'laptop'), 4, 'retire a host gone already');
  });
});
