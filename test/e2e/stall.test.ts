/**
 * Stall detection apart from liveness, with real `baton up` processes: an agent that heartbeats
 * its claim but prints nothing and changes nothing is marked stalled after --stall-after, and
 * the action does what it says; an agent that keeps printing is never marked.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { treeMembers } from '../../src/os/process-tree.js';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, STEADY, type ClusterFixture, withCluster } from './cluster-support.js';

const BIN = join(ROOT, 'bin', 'baton.js');
const STALL_AFTER_S = 1.5;

/** Heartbeats its own claim every second, prints nothing, changes nothing: alive, not progressing. */
const SILENT = `while :; do "${process.execPath}" "${BIN}" heartbeat "$BATON_SESSION" --key "$BATON_KEY" --epoch "$BATON_EPOCH" >/dev/null 2>&1; sleep 1; done`;
/** Prints a line every 200 ms. */
const CHATTY = 'while :; do echo working; sleep 0.2; done';

async function job(c: ClusterFixture, key: string) {
  const [j] = await c.store.jobs.list({ key });
  assert.ok(j !== undefined, `a job for ${key}`);
  return j;
}

async function stalledRows(c: ClusterFixture, key: string) {
  return c.store.audit.list({ key, type: 'job:stalled' });
}

for (const db of bothEngines()) {
  describe(`stall detection (${db.name})`, () => {
    test('marks a silent agent stalled and only reports it with action none; an agent that prints is never marked', () =>
      withCluster(db, async (c) => {
        await c.baton('enqueue', 'silent', '--command', SILENT);
        await c.baton('enqueue', 'chatty', '--command', CHATTY);
        const up = c.up('h1', ...STEADY, '--stall-after', String(STALL_AFTER_S), '--stall-action', 'none');
        await waitUntil(async () => (await stalledRows(c, 'silent')).length === 1, 20_000, 'silent to stall');
        await up.waitForLog(/job \d+ silent: stalled, no progress since .* \(action none\)/);
        const list = await c.baton('queue', 'list');
        assert.match(list.stdout, /silent\s+stalled\s+h1\s.*no progress since \d{4}-/);
        const shown = await c.baton('job', 'show', String((await job(c, 'silent')).id));
        assert.match(shown.stdout, /STALLED: no progress since \d{4}-/);
        const json = JSON.parse((await c.baton('queue', 'list', '--key', 'silent', '--json')).stdout) as {
          status: string;
          stalled: boolean;
          lastProgressAt: string;
        }[];
        assert.equal(json[0]?.status, 'running', 'none only reports: the job runs on');
        assert.equal(json[0]?.stalled, true);
        assert.match(json[0]?.lastProgressAt ?? '', /^\d{4}-/);
        // The chatty agent started with the silent one; give it three thresholds more.
        const chatty = await job(c, 'chatty');
        await new Promise((r) => setTimeout(r, 3 * STALL_AFTER_S * 1000));
        assert.deepEqual(await stalledRows(c, 'chatty'), []);
        assert.equal((await job(c, 'chatty')).status, 'running');
        const progress = await c.store.progress.get(chatty.agentSession ?? 0);
        assert.ok((progress?.outputBytes ?? 0) > 0, 'its output was counted');
        assert.equal((await job(c, 'silent')).status, 'running');
        assert.equal((await stalledRows(c, 'silent')).length, 1, 'stalled once, not on every look');
      }));

    test('by default escalates a silent agent: its task waits for a human, its job and claim end escalated, its tree dies', () =>
      withCluster(db, async (c) => {
        await c.baton('enqueue', 'silent', '--command', SILENT);
        c.up('h1', ...STEADY, '--stall-after', String(STALL_AFTER_S));
        await waitUntil(async () => (await job(c, 'silent')).pid !== null, 15_000, 'the agent to start');
        const pid = (await job(c, 'silent')).pid ?? 0;
        await waitUntil(async () => (await job(c, 'silent')).status === 'escalated', 20_000, 'escalated');
        const task = await c.store.tasks.get('silent');
        assert.equal(task?.state, 'escalated');
        assert.match(task?.stateReason ?? '', /^stalled: no progress since \d{4}-.*\(stall-after 1\.5 s\)$/);
        assert.equal(task?.holder, null, 'the claim ended');
        const [claim] = await c.store.claims.history('silent');
        assert.equal(claim?.outcome, 'escalated');
        await waitUntil(() => treeMembers(pid).length === 0, 5_000, 'the agent tree to die');
        const escalations = await c.baton('escalations', '--json');
        assert.match(escalations.stdout, /"silent"/);
        // Nothing runs it again until a human resolves it.
        assert.equal((await c.store.jobs.list({ key: 'silent' })).length, 1);
      }));

    test('fails a silent agent with reason stalled and kills its tree with action kill', () =>
      withCluster(db, async (c) => {
        await c.baton('enqueue', 'silent', '--command', SILENT, '--attempts', '1');
        c.up('h1', ...STEADY, '--stall-after', String(STALL_AFTER_S), '--stall-action', 'kill');
        await waitUntil(async () => (await job(c, 'silent')).pid !== null, 15_000, 'the agent to start');
        const pid = (await job(c, 'silent')).pid ?? 0;
        await waitUntil(async () => (await job(c, 'silent')).status === 'failed', 20_000, 'the job to fail');
        const failed = await job(c, 'silent');
        assert.match(failed.reason ?? '', /^stalled: no progress since \d{4}-.*\(stall-after 1\.5 s\)$/);
        const types = (await c.store.audit.list({ jobId: failed.id })).map((e) => e.type);
        assert.deepEqual(types.slice(-2), ['job:stalled', 'job:finished']);
        await waitUntil(() => treeMembers(pid).length === 0, 5_000, 'the agent tree to die');
        assert.equal((await c.store.tasks.get('silent'))?.holder, null, 'the claim was released');
      }));
  });
}
