/**
 * `baton status`'s hosts line counts the claimed and running jobs of every host, whatever it stands
 * as (decision 0045): a job on a silent or down host waits for recovery and is exactly what an
 * operator must see; one on a draining, drained, standby or disabled host finishes there. Real
 * hosts rows in each state, made in the real store; the real `baton`, with --db and over HTTP.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { givenLeader } from '../store/conformance/dispatch.js';
import { stopServers } from '../../test/support/cli.js';
import { describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

/** A host served by a daemon session of `ttlMs` (how long it may go without a report). */
async function host(store: Store, name: string, ttlMs: number) {
  const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1, ttlMs });
  const capacity = { ramTotalMb: 16_000, ramReservedMb: 1_000, ramFreeMb: 12_000, slotsMax: 4 };
  await store.hosts.register({ name, session: session.id, ...capacity });
  return session;
}

const SILENT_TTL_MS = 1000;
const LIVE_TTL_MS = 3_600_000;

/** The hosts in every state, their jobs placed while they were enabled: live, silent (5), down, … */
async function givenFleet(store: Store): Promise<void> {
  const sessions = new Map<string, number>();
  for (const name of ['busy-box', 'gone-box', 'drain-box', 'drained-box', 'spare-box', 'off-box']) {
    sessions.set(name, (await host(store, name, LIVE_TTL_MS)).id);
  }
  for (const name of ['quiet-a', 'quiet-b', 'quiet-c', 'quiet-d', 'quiet-idle']) {
    await host(store, name, SILENT_TTL_MS);
  }
  const term = await givenLeader(store);
  const placed = ['busy-box', 'quiet-a', 'quiet-a', 'quiet-b', 'quiet-c', 'quiet-d', 'gone-box'];
  placed.push('drain-box', 'drained-box', 'spare-box', 'off-box', 'off-box');
  for (const [index, name] of placed.entries()) {
    const { job } = await store.jobs.enqueue({ key: `job-${index}-on-${name}` });
    assert.ok((await store.dispatch.place({ id: job.id, host: name, term })).ok, name);
  }
  const session = (name: string): number => sessions.get(name) ?? 0;
  for (const name of ['drain-box', 'drained-box']) {
    assert.equal(await store.hosts.drain({ name, session: session(name) }), true);
  }
  for (const name of ['spare-box', 'off-box']) await store.hosts.setEnabled({ name, enabled: false });
  for (const name of ['gone-box', 'drained-box', 'off-box']) await store.sessions.end(session(name));
}

describeCli('baton status: the jobs on hosts in every state', ({ setup }) => {
  test('the hosts line counts the jobs of silent, down, drained, disabled, draining and standby hosts', async () => {
    const t = await setup();
    const store = await openStore(t.db, { intent: 'use' });
    try {
      await givenFleet(store);
    } finally {
      await store.close();
    }
    await sleep(SILENT_TTL_MS + 200);
    const status = await t.run('status');
    assert.equal(status.code, 0, status.stderr);
    const line = status.stdout.split('\n').find((each) => each.startsWith('hosts '));
    assert.equal(
      line?.replace(/^hosts +/, ''),
      '1 live, 5 silent, 1 down, 1 in warm standby, 1 draining, 1 drained, 1 disabled and not serving; ' +
        '1/4 slots busy, ' +
        '5 more running on silent hosts (quiet-a, quiet-b, quiet-c and 1 more), ' +
        '1 more running on down hosts (gone-box), 1 more running on drained hosts (drained-box), ' +
        '2 more running on disabled hosts (off-box), 1 more running on draining hosts (drain-box), ' +
        '1 more running on standby hosts (spare-box)',
      status.stdout,
    );
    const json = await t.json<{ jobsOnHosts: unknown }>(0, 'status');
    assert.deepEqual(json.jobsOnHosts, {
      live: { jobs: 1, hosts: ['busy-box'] },
      silent: { jobs: 5, hosts: ['quiet-a', 'quiet-b', 'quiet-c', 'quiet-d'] },
      down: { jobs: 1, hosts: ['gone-box'] },
      drained: { jobs: 1, hosts: ['drained-box'] },
      disabled: { jobs: 2, hosts: ['off-box'] },
      draining: { jobs: 1, hosts: ['drain-box'] },
      standby: { jobs: 1, hosts: ['spare-box'] },
    });
  });
});
