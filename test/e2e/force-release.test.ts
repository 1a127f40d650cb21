/**
 * `baton force-release` against a real `baton up` running a real agent: the agent's whole tree
 * dies within a heartbeat, its job ends cancelled with the reason, its session is fenced, the
 * ledger names who and why, and the task can be claimed again at a higher epoch.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { processExists } from '../../src/os/process-tree.js';
import { treeMembers } from '../../src/os/process-tree.js';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

/** Leaves a grandchild behind (its pid in a file) and works forever. */
const AGENT =
  'sleep 600 & echo $! > "$BATON_PIDFILE_DIR/grandchild"; while :; do echo working; sleep 0.2; done';

for (const db of bothEngines()) {
  describe(`force-release (${db.name})`, () => {
    test("kills the agent's tree, cancels its job, fences its session and writes the ledger row", async () => {
      const c = await clusterFixture(db);
      try {
        const command = AGENT.replace('$BATON_PIDFILE_DIR', c.dir);
        const queued = await c.baton('enqueue', 'k', '--command', command);
        assert.equal(queued.code, 0, queued.stderr);
        c.up('h1');
        const running = async () => (await c.store.jobs.list({ key: 'k' }))[0];
        await waitUntil(async () => (await running())?.pid != null, 15_000, 'the agent to start');
        const grandchild = join(c.dir, 'grandchild');
        const written = () => existsSync(grandchild) && readFileSync(grandchild, 'utf8').trim() !== '';
        await waitUntil(written, 5_000, 'the pid file');
        const job = await running();
        assert.ok(job?.pid != null && job.agentSession !== null);
        const leftover = Number(readFileSync(grandchild, 'utf8').trim());
        assert.ok(processExists(leftover), 'the grandchild runs');
        const claim = await c.store.claims.current('k');
        assert.ok(claim !== null && claim.session === job.agentSession);

        const r = await c.baton('force-release', 'k', '--reason', 'looping on the same test', '--json');
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout) as { epoch: number; job: { id: number; was: string } };
        assert.equal(out.epoch, claim.epoch);
        assert.deepEqual(out.job, { id: job.id, was: 'running' });

        await waitUntil(() => treeMembers(job.pid ?? 0).length === 0, 10_000, "the agent's tree to die");
        await waitUntil(() => !processExists(leftover), 5_000, 'the grandchild to die');
        const ended = await running();
        assert.equal(ended?.status, 'cancelled');
        assert.equal(ended?.reason?.endsWith(': looping on the same test'), true, ended?.reason ?? '');
        const hb = await c.store.sessions.heartbeat({
          session: claim.session,
          claim: { key: 'k', epoch: claim.epoch },
        });
        assert.equal(hb.ok, false, 'the old holder is fenced');
        const [row] = await c.store.audit.list({ key: 'k', type: 'claim:force_released' });
        assert.equal(row?.epoch, claim.epoch);
        assert.equal(row?.session, claim.session);
        assert.equal(row?.detail['reason'], 'looping on the same test');
        assert.match(String(row?.detail['by']), /@/);
        const again = await c.baton('force-release', 'k', '--reason', 'again');
        assert.equal(again.code, 4, again.stderr);
        assert.match(again.stderr, /^baton: k has no live claim — /);
        const human = (await c.baton('session', 'start', '--kind', 'human', '--ttl', '1h')).stdout.trim();
        const reclaimed = await c.baton('claim', 'k', '--session', human, '--json');
        assert.equal(reclaimed.code, 0, reclaimed.stderr);
        assert.ok((JSON.parse(reclaimed.stdout) as { epoch: number }).epoch > claim.epoch);
      } finally {
        await c.close();
      }
    });
  });
}
