/**
 * What `baton status` and `baton hosts` say of a host whose `baton up` drains (decision 0034) and
 * of a runner's settings (decision 0037): real databases, hosts and jobs made in the real store,
 * the real `baton` command, with --db and over HTTP.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { givenHost, givenLeader } from '../store/conformance/dispatch.js';
import { stopServers } from '../../test/support/cli.js';
import { describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

async function withStore(db: string, use: (store: Store) => Promise<void>): Promise<void> {
  const store = await openStore(db, { intent: 'use' });
  try {
    await use(store);
  } finally {
    await store.close();
  }
}

describeCli('baton status and hosts of a draining host', ({ setup }) => {
  test('status counts the jobs a draining host still runs, apart from the slots that take work', async () => {
    const t = await setup();
    await withStore(t.db, async (store) => {
      await givenHost(store, 'busy-box', { slotsMax: 2 });
      const { session } = await givenHost(store, 'drain-box', { slotsMax: 3 });
      const term = await givenLeader(store);
      for (const host of ['busy-box', 'drain-box', 'drain-box']) {
        const { job } = await store.jobs.enqueue({ key: `on-${host}-${Math.random()}` });
        assert.ok((await store.dispatch.place({ id: job.id, host, term })).ok);
      }
      assert.equal(await store.hosts.drain({ name: 'drain-box', session: session.id }), true);
    });
    const status = await t.run('status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      /^hosts +1 live, 1 draining; 1\/2 slots busy, 2 more running on draining hosts$/m,
      status.stdout,
    );
  });
});
