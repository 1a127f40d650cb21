/**
 * `baton host enable|disable` of a host that has that flag already changes nothing: no ledger row,
 * one line saying so, exit 0, `changed: false` in --json (the database judges it, in the guarded
 * update). The real `baton` on both engines, with --db and over HTTP; the host made in the real store.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../store/open.js';
import { givenHost } from '../store/conformance/dispatch.js';
import { stopServers } from '../../test/support/cli.js';
import { describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

describeCli('baton host enable|disable twice', ({ setup }) => {
  test('the second disable (or enable) says the host is so already and writes no ledger row', async () => {
    const t = await setup();
    const store = await openStore(t.db, { intent: 'use' });
    try {
      await givenHost(store, 'box-1');
    } finally {
      await store.close();
    }
    const rows = async (type: string) => (await t.json<unknown[]>(0, 'audit', '--type', type)).length;
    for (const [verb, said] of [
      ['disable', 'disabled (standby)'],
      ['enable', 'enabled'],
    ] as const) {
      const first = await t.run('host', verb, 'box-1');
      assert.deepEqual([first.code, first.stdout, first.stderr], [0, `host box-1 ${said}\n`, '']);
      const second = await t.run('host', verb, 'box-1');
      assert.deepEqual(
        [second.code, second.stdout, second.stderr],
        [0, `host box-1 is already ${verb}d\n`, ''],
      );
      const third = await t.json<{ name: string; enabled: boolean; changed: boolean }>(
        0,
        'host',
        verb,
        'box-1',
      );
      assert.deepEqual([third.name, third.enabled, third.changed], ['box-1', verb === 'enable', false]);
      assert.equal(await rows(`host:${verb}d`), 1, `one host:${verb}d row for three ${verb}s`);
    }
    const again = await t.json<{ changed: boolean }>(0, 'host', 'disable', 'box-1');
    assert.equal(again.changed, true, 'a change after them is one again');
    assert.equal(await rows('host:disabled'), 2);
  });
});
