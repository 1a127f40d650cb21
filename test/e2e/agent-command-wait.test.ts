/**
 * A job without a command waits for a host that can run it
 * (docs/decisions/0047-jobs-wait-for-an-agent-command.md), with real `baton up` processes: under a
 * `baton up` without --agent-command, `baton enqueue K` queues it with one warning line (exit 0);
 * it is never placed there, spends no attempt, and `baton queue list` and `baton status` say why it
 * waits; a job with its own command runs there as before. A second `baton up --agent-command …`
 * then runs it. The agent command may come from `baton up --config` as well.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WAITING_FOR_AGENT_COMMAND } from '../../src/core/capacity.js';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, type ClusterFixture, withCluster } from './cluster-support.js';

async function job(c: ClusterFixture, key: string) {
  const [found] = await c.store.jobs.list({ key });
  assert.ok(found !== undefined, `a job for ${key}`);
  return found;
}

async function hostsAgentCommand(c: ClusterFixture): Promise<Record<string, unknown>> {
  const hosts = await c.baton('hosts', '--json');
  assert.equal(hosts.code, 0, hosts.stderr);
  const rows = JSON.parse(hosts.stdout) as { name: string; agentCommand: unknown }[];
  return Object.fromEntries(rows.map((host) => [host.name, host.agentCommand]));
}

for (const db of bothEngines()) {
  describe(`jobs without a command wait for a host with an agent command (${db.name})`, () => {
    test('waits, saying why, under a baton up without one; runs once a baton up with one joins', () =>
      withCluster(db, async (c) => {
        const plain = c.up('h1', ...STEADY);
        await plain.waitRunning();
        assert.deepEqual(await hostsAgentCommand(c), { h1: false });
        const bare = await c.baton('enqueue', 'bare');
        assert.equal(bare.code, 0, bare.stderr);
        assert.match(bare.stdout, /^queued job \d+ for bare/);
        assert.equal(
          bare.stderr,
          'baton: warning: no live baton up has an --agent-command, so this job (no --command) waits ' +
            'until one has: start baton up with --agent-command, take it with `baton job next`, ' +
            'or cancel it and enqueue with --command\n',
        );
        const told = await c.baton('enqueue', 'told', '--command', 'true');
        assert.equal(told.code, 0, told.stderr);
        assert.equal(told.stderr, '', 'a job with a command is not warned about');
        await waitUntil(async () => (await job(c, 'told')).status === 'done', 20_000, 'told to run on h1');
        await waitUntil(
          async () => (await job(c, 'bare')).reason === WAITING_FOR_AGENT_COMMAND,
          15_000,
          'the reason of bare',
        );
        const waiting = await job(c, 'bare');
        assert.deepEqual(
          { status: waiting.status, attempt: waiting.attempt, epoch: waiting.epoch, host: waiting.host },
          { status: 'queued', attempt: 0, epoch: 0, host: null },
          'never placed, no attempt spent',
        );
        const list = await c.baton('queue', 'list');
        assert.match(
          list.stdout,
          /bare\s+queued\s.*waiting for a host with an agent command: start baton up/,
        );
        const status = await c.baton('status');
        assert.match(
          status.stdout,
          /\n {9}1 job waiting for a host with an agent command: start baton up with --agent-command/,
        );
        const statusJson = JSON.parse((await c.baton('status', '--json')).stdout) as Record<string, unknown>;
        assert.equal(statusJson['waitingForAgentCommand'], 1);
        assert.deepEqual(await c.store.audit.list({ key: 'bare', type: 'job:placed' }), [], 'no placement');

        const agent = c.up('h2', ...STEADY, '--agent-command', 'echo ran {{key}}');
        await waitUntil(async () => (await job(c, 'bare')).status === 'done', 20_000, 'bare to run on h2');
        const ran = await job(c, 'bare');
        assert.deepEqual({ host: ran.host, attempt: ran.attempt }, { host: 'h2', attempt: 1 });
        assert.deepEqual(await hostsAgentCommand(c), { h1: false, h2: true });
        const again = await c.baton('enqueue', 'bare-2');
        assert.equal(again.stderr, '', 'a live baton up has an agent command now: no warning');
        await waitUntil(async () => (await job(c, 'bare-2')).status === 'done', 20_000, 'bare-2 to run');
        assert.equal((await job(c, 'bare-2')).host, 'h2');
        await agent.waitForLog(/job \d+ bare-2/);
      }));

    test("takes the agent command from baton up's --config file too", () =>
      withCluster(db, async (c) => {
        const file = join(c.dir, 'up.json');
        writeFileSync(file, JSON.stringify({ 'agent-command': 'echo ran {{key}}' }));
        await c.baton('enqueue', 'bare');
        c.up('h1', ...STEADY, '--config', file);
        await waitUntil(async () => (await job(c, 'bare')).status === 'done', 20_000, 'bare to run on h1');
        assert.deepEqual(await hostsAgentCommand(c), { h1: true });
      }));
  });
}
