/** hosts.drain: a runner's own drain disables its host until its next `baton up`; an operator's flag stays. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenHost } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

/** A new `baton up` on the host: a new session registering it without the standby flag. */
async function restart(store: Store, name = 'box-1') {
  const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 2 });
  const capacity = { ramTotalMb: 16_000, ramReservedMb: 1_000, ramFreeMb: 12_000, slotsMax: 4 };
  return store.hosts.register({ name, session: session.id, ...capacity });
}

export function exerciseHostDrain(harness: Harness): void {
  describe('host drain', () => {
    test('a drain disables the host its live session serves, audited, and the next register enables it', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        assert.equal(await store.hosts.drain({ name: 'box-1', session: session.id }), true);
        const [host] = await store.hosts.list();
        assert.equal(host?.enabled, false, 'nothing is placed on a draining host');
        assert.equal(host?.draining, true);
        assert.equal((await store.hosts.fleet()).open.length, 0, 'the fleet offers no draining host');
        const rows = await store.audit.list();
        const disabled = rows.filter((row) => row.type === 'host:disabled');
        assert.deepEqual(
          disabled.map((row) => [row.session, row.detail['by']]),
          [[session.id, 'drain']],
        );
        await store.sessions.end(session.id);
        const again = await restart(store);
        assert.equal(again.enabled, true, 'a host disabled only by a drain comes back enabled');
        assert.equal(again.draining, false);
      }));

    test('a drain leaves an operator-disabled host alone, and it stays disabled after a restart', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        await store.hosts.setEnabled({ name: 'box-1', enabled: false, actor: 'alice@box' });
        const before = (await store.audit.list()).length;
        assert.equal(await store.hosts.drain({ name: 'box-1', session: session.id }), false);
        assert.equal(
          (await store.audit.list()).length,
          before,
          'no ledger row for a drain that changed nothing',
        );
        assert.equal((await store.hosts.list())[0]?.draining, false);
        await store.sessions.end(session.id);
        assert.equal((await restart(store)).enabled, false, "the operator's disable survives the restart");
      }));

    test("an operator's disable during a drain is the operator's: the restart keeps the host disabled", () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        assert.equal(await store.hosts.drain({ name: 'box-1', session: session.id }), true);
        const off = await store.hosts.setEnabled({ name: 'box-1', enabled: false, actor: 'alice@box' });
        assert.deepEqual([off.host.enabled, off.host.draining, off.changed], [false, false, true]);
        await store.sessions.end(session.id);
        assert.equal((await restart(store)).enabled, false);
      }));

    test('an enable or disable of a host that has that flag already changes nothing and writes no row', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const rows = async () => (await store.audit.list()).map((entry) => [entry.type, entry.detail['by']]);
        const toggle = (enabled: boolean, actor: string) =>
          store.hosts.setEnabled({ name: 'box-1', enabled, actor });
        assert.equal((await toggle(true, 'alice@box')).changed, false, 'a new host is enabled already');
        assert.equal((await toggle(false, 'alice@box')).changed, true);
        const before = await rows();
        const again = await toggle(false, 'bob@box');
        assert.deepEqual([again.changed, again.host.enabled, again.host.name], [false, false, 'box-1']);
        assert.deepEqual(await rows(), before, 'no ledger row for a disable that changed nothing');
        assert.equal((await toggle(true, 'bob@box')).changed, true);
        assert.equal((await toggle(true, 'carol@box')).changed, false);
        assert.deepEqual((await rows()).slice(before.length), [['host:enabled', 'bob@box']]);
        for (const enabled of [true, false])
          await assert.rejects(store.hosts.setEnabled({ name: 'nowhere', enabled }), { code: 'not_found' });
      }));

    test('a drain by a session that does not serve the host, or has ended, changes nothing', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const stranger = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 3 });
        assert.equal(await store.hosts.drain({ name: 'box-1', session: stranger.id }), false);
        await store.sessions.end(session.id);
        assert.equal(await store.hosts.drain({ name: 'box-1', session: session.id }), false);
        assert.equal(await store.hosts.drain({ name: 'nowhere', session: session.id }), false);
        const [host] = await store.hosts.list();
        assert.deepEqual([host?.enabled, host?.draining], [true, false]);
      }));
  });
}
