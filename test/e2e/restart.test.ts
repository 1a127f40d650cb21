/**
 * One host, the commonest deployment: `baton up` dies by SIGKILL while it leads and runs a job.
 * Nobody else is left to rescue its session, so a restart used to be refused for ever ("host solo
 * is served by live session N"). The restart now takes the host over once the old process is
 * provably gone, and the job runs to the end. A live process serving the host is never taken
 * over: the restart is refused with exit 3, as before.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { treeMembers } from '../../src/os/process-tree.js';
import { bothEngines } from '../support/databases.js';
import { agentStarted, clusterFixture, isAlive } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

for (const db of bothEngines()) {
  describe(`${db.name}: baton up restarted on its own host`, () => {
    test('takes the host over from its SIGKILLed predecessor and finishes the job it ran', async () => {
      const c = await clusterFixture(db);
      try {
        await c.store.jobs.enqueue({ key: 'long', command: 'test "$BATON_ATTEMPT" -gt 1 || exec sleep 60' });
        // A lease that outlives a slow restart on a loaded machine (2 s did not), so that only the
        // takeover's resign, not the lease's expiry, can let term 2 begin.
        const slowLease = ['--lease-ttl', '8'];
        const first = c.up('solo', ...slowLease);
        await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
        const tree = treeMembers((await c.store.jobs.list({ key: 'long' }))[0]?.pid ?? 0);
        first.signal('SIGKILL');
        await first.exited();
        await waitUntil(() => tree.every((pid) => !isAlive(pid)), 5_000, 'the agent tree to die with it');
        const second = c.up('solo', ...slowLease);
        await second.waitForLog(/took over host solo from session \d+ \(pid \d+ is no longer running here\)/);
        await second.waitForLog(/leading the dispatcher, term 2/);
        const resigned = await c.store.audit.list({ type: 'lease:resigned' });
        assert.equal(resigned.length, 1, "the dead leader's lease was resigned for it, not left to expire");
        await waitUntil(
          async () => (await c.store.jobs.list({ key: 'long' }))[0]?.status === 'done',
          30_000,
          `the job to finish after the restart:\n${second.log()}`,
        );
        const [job] = await c.store.jobs.list({ key: 'long' });
        assert.equal(job?.attempt, 2);
        const old = (await c.store.sessions.list()).filter((s) => s.pid === first.pid);
        assert.ok(old.length >= 2, 'the runner and its agent');
        assert.ok(
          old.every((s) => s.state !== 'live'),
          'no session of the dead process is left live',
        );
      } finally {
        await c.close();
      }
    });

    test('refuses to take over a host whose serving process is alive (exit 3)', async () => {
      const c = await clusterFixture(db);
      try {
        const first = c.up('solo');
        await first.waitForLog(/leading the dispatcher/);
        const r = await c.baton('up', '--host', 'solo');
        assert.equal(r.code, 3, r.stderr);
        assert.match(r.stderr, /host solo is served by live session/);
        assert.doesNotMatch(r.stdout, /serving the API/, 'a refused `baton up` never says it serves');
        assert.ok(isAlive(first.pid));
      } finally {
        await c.close();
      }
    });
  });
}
