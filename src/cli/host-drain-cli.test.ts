/**
 * What `baton status` and `baton hosts` say of a host whose `baton up` drains (decision 0034) and
 * of a runner's settings (decisions 0037 and 0047): real databases, hosts and jobs made in the real store,
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
      /^hosts +1 live, 1 draining; 1\/2 slots busy, 2 more running on draining hosts \(drain-box\)$/m,
      status.stdout,
    );
  });

  test('status counts the jobs a standby (disabled by an operator mid-run) still runs, apart too', async () => {
    const t = await setup();
    await withStore(t.db, async (store) => {
      await givenHost(store, 'busy-box', { slotsMax: 2 });
      const { session } = await givenHost(store, 'drain-box', { slotsMax: 3 });
      await givenHost(store, 'spare-box', { slotsMax: 4 });
      const term = await givenLeader(store);
      for (const host of ['busy-box', 'drain-box', 'spare-box', 'spare-box', 'spare-box']) {
        const { job } = await store.jobs.enqueue({ key: `on-${host}-${Math.random()}` });
        assert.ok((await store.dispatch.place({ id: job.id, host, term })).ok);
      }
      assert.equal(await store.hosts.drain({ name: 'drain-box', session: session.id }), true);
      await store.hosts.setEnabled({ name: 'spare-box', enabled: false });
    });
    const status = await t.run('status');
    assert.equal(status.code, 0, status.stderr);
    const line = status.stdout.split('\n').find((each) => each.startsWith('hosts '));
    assert.equal(
      line?.replace(/^hosts +/, ''),
      '1 live, 1 in warm standby, 1 draining; 1/2 slots busy, ' +
        '1 more running on draining hosts (drain-box), 3 more running on standby hosts (spare-box)',
      status.stdout,
    );
  });

  test("hosts shows each runner's default time limit (baton up --time-limit), - for none", async () => {
    const t = await setup();
    await withStore(t.db, async (store) => {
      const capacity = { ramTotalMb: 8000, ramReservedMb: 0, ramFreeMb: 8000, slotsMax: 2 };
      for (const [name, timeLimitMs] of [
        ['limited', 14_400_000],
        ['plain', null],
      ] as const) {
        const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
        await store.hosts.register({ name, session: session.id, timeLimitMs, ...capacity });
      }
    });
    const hosts = await t.run('hosts');
    assert.equal(hosts.code, 0, hosts.stderr);
    const [header = '', ...rows] = hosts.stdout.split('\n');
    const at = header.indexOf('TIME_LIMIT');
    assert.ok(at > 0, header);
    const limitOf = (name: string) =>
      rows
        .find((row) => row.startsWith(`${name} `))
        ?.slice(at)
        .split(' ')[0];
    assert.equal(limitOf('limited'), '4h', hosts.stdout);
    assert.equal(limitOf('plain'), '-', hosts.stdout);
    const json = await t.json<{ name: string; timeLimitMs: number | null }[]>(0, 'hosts');
    assert.deepEqual(
      json.map((host) => [host.name, host.timeLimitMs]),
      [
        ['limited', 14_400_000],
        ['plain', null],
      ],
    );
  });

  test('hosts says whether each runner runs jobs without a command (AGENT_CMD: yes, no, ? when not said)', async () => {
    const t = await setup();
    await withStore(t.db, async (store) => {
      const capacity = { ramTotalMb: 8000, ramReservedMb: 0, ramFreeMb: 8000, slotsMax: 2 };
      for (const [name, agentCommand] of [
        ['able', true],
        ['bare', false],
        ['older', undefined],
      ] as const) {
        const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
        await store.hosts.register({ name, session: session.id, agentCommand, ...capacity });
      }
    });
    const hosts = await t.run('hosts');
    assert.equal(hosts.code, 0, hosts.stderr);
    const [header = '', ...rows] = hosts.stdout.split('\n');
    const at = header.indexOf('AGENT_CMD');
    assert.ok(at > 0, header);
    const flagOf = (name: string) =>
      rows
        .find((row) => row.startsWith(`${name} `))
        ?.slice(at)
        .split(' ')[0];
    assert.deepEqual(['able', 'bare', 'older'].map(flagOf), ['yes', 'no', '?'], hosts.stdout);
  });
});
