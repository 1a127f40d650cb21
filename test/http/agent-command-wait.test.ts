/**
 * POST /v1/jobs of a job without a command when no live `baton up` has an --agent-command
 * (docs/decisions/0047-jobs-wait-for-an-agent-command.md), a real `baton serve` on both engines:
 * the job is queued (200) with a `warning` saying why it will wait and how to fix it; a job with
 * a command, or one enqueued once a live host has an agent command, carries none. Read back, the
 * job says why it waits, though no dispatcher ran to write it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WAITING_FOR_AGENT_COMMAND } from '../../src/core/capacity.js';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

const NO_AGENT_COMMAND_WARNING =
  'no live baton up has an --agent-command, so this job (no --command) waits until one has: ' +
  'start baton up with --agent-command, take it with `baton job next`, or cancel it and enqueue with --command';

for (const db of bothEngines()) {
  describe(`enqueue warnings over HTTP (${db.name})`, () => {
    test('POST /v1/jobs warns of a job without a command while no live host has an agent command', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'agent-command' });
        const post = (body: unknown) => call(server.url, 'POST', '/v1/jobs', { token: secret, body });
        const bare = await post({ key: 'bare' });
        assert.equal(bare.status, 200, JSON.stringify(bare.body));
        assert.equal(bare.body['created'], true);
        assert.equal(bare.body['warning'], NO_AGENT_COMMAND_WARNING);
        const queued = bare.body['job'] as { id: number; status: string };
        assert.equal(queued.status, 'queued', 'queued all the same');
        // No dispatcher runs: the reason is said when the job is read (coordinator/held-reasons.ts).
        const read = async (id: number) =>
          (await call(server.url, 'GET', `/v1/jobs/${id}`, { token: secret })).body;
        assert.equal((await read(queued.id))['reason'], WAITING_FOR_AGENT_COMMAND);
        const again = await post({ key: 'bare' });
        assert.equal(again.body['created'], false);
        assert.equal(again.body['warning'], undefined, 'nothing new was queued');
        const told = await post({ key: 'told', command: 'true' });
        assert.equal(told.body['warning'], undefined, 'a job with a command');
        const withoutOne = await store.sessions.start({ kind: 'daemon', host: 'h1', pid: 1 });
        const hostParams = { ramTotalMb: 8_000, ramReservedMb: 500, ramFreeMb: 6_000, slotsMax: 2 };
        await store.hosts.register({
          name: 'h1',
          session: withoutOne.id,
          ...hostParams,
          agentCommand: false,
        });
        assert.equal((await post({ key: 'bare-2' })).body['warning'], NO_AGENT_COMMAND_WARNING);
        const withOne = await store.sessions.start({ kind: 'daemon', host: 'h2', pid: 1 });
        await store.hosts.register({ name: 'h2', session: withOne.id, ...hostParams, agentCommand: true });
        const served = await post({ key: 'bare-3' });
        assert.equal(served.body['created'], true);
        assert.equal(served.body['warning'], undefined, 'a live host has an agent command');
        assert.equal((await read(queued.id))['reason'], null, 'one may run it now: no reason is made up');
      } finally {
        await server.stop();
        await store.close();
      }
    });

    // Decision 0047, review fixes: a `baton job next --wait` takes a job without a command (the
    // script is the agent); one handed to it at enqueue is claimed already, and nothing waits.
    test('POST /v1/jobs does not warn of a job handed at enqueue to a waiting job next', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'agent-command' });
        const worker = await store.sessions.start({ kind: 'agent', host: 'script-box', pid: 1 });
        assert.equal(await store.jobs.claimNext({ session: worker.id, start: true, waitMs: 60_000 }), null);
        const handed = await call(server.url, 'POST', '/v1/jobs', { token: secret, body: { key: 'handed' } });
        assert.equal(handed.status, 200, JSON.stringify(handed.body));
        assert.equal((handed.body['job'] as { status: string }).status, 'running', 'handed at enqueue');
        assert.equal(handed.body['warning'], undefined, 'the job is taken: nothing waits');
        const queued = await call(server.url, 'POST', '/v1/jobs', { token: secret, body: { key: 'next' } });
        assert.equal(
          queued.body['warning'],
          NO_AGENT_COMMAND_WARNING,
          'the waiter took one: the next is warned',
        );
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
