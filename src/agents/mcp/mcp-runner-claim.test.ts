/**
 * `baton mcp` under a runner's claim (BATON_SESSION, BATON_KEY, BATON_EPOCH), driven by the SDK's
 * Client: a release `done` of that claim is left to the runner, which finishes the job by the
 * agent's exit; any other release, and a release of a claim the model made itself, goes through.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Coordinator } from '../../coordinator/coordinator.js';
import { baton } from '../../../test/support/cli.js';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { connect, structured, withBaton } from '../../../test/support/mcp-client.js';

describe("baton mcp under a runner's claim", () => {
  test('release done of the runner’s claim releases nothing; failed, and its own claims, are released', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 'run', title: "the run's task" });
      await store.tasks.add({ key: 'own', title: 'claimed by the model' });
      const runner = await store.sessions.start({ kind: 'agent', host: 'box', pid: 1 });
      const granted = await store.claims.acquire({ key: 'run', session: runner.id });
      assert.ok(granted.ok);
      const epoch = granted.claim.epoch;
      const client = await connect(db, {
        BATON_SESSION: String(runner.id),
        BATON_KEY: 'run',
        BATON_EPOCH: String(epoch),
      });
      const call = async (name: string, args: Record<string, unknown>) =>
        structured(await client.callTool({ name, arguments: args }));
      try {
        const done = await call('baton_release', { key: 'run', epoch, outcome: 'done' });
        assert.equal(done.ok, true, JSON.stringify(done));
        assert.match(done.message ?? '', /^Nothing released: Baton's runner holds run for this run/);
        assert.equal(done['released'], false);
        assert.equal((await store.claims.current('run'))?.session, runner.id, 'the claim stays the runner’s');
        assert.equal((await store.tasks.get('run'))?.state, 'open');

        const mine = await call('baton_claim', { key: 'own' });
        const ownDone = await call('baton_release', { key: 'own', epoch: mine.epoch, outcome: 'done' });
        assert.match(ownDone.message ?? '', /^Released own \(done\)/);
        assert.equal((await store.tasks.get('own'))?.state, 'done', 'a claim the model made is its own');

        const failed = await call('baton_release', { key: 'run', epoch, outcome: 'failed' });
        assert.match(failed.message ?? '', /^Released run \(failed\)/);
        assert.equal(await store.claims.current('run'), null);

        await store.tasks.add({ key: 'forced', title: 'taken away' });
        const again = await store.claims.acquire({ key: 'forced', session: runner.id });
        assert.ok(again.ok);
        await new Coordinator(store).forceRelease({ key: 'forced', reason: 'r', by: { name: 'op' } });
        const other = await connect(db, {
          BATON_SESSION: String(runner.id),
          BATON_KEY: 'forced',
          BATON_EPOCH: String(again.claim.epoch),
        });
        try {
          const args = { key: 'forced', epoch: again.claim.epoch, outcome: 'done' };
          const fenced = structured(await other.callTool({ name: 'baton_release', arguments: args }));
          assert.deepEqual(
            [fenced.ok, fenced.reason],
            [false, 'fenced'],
            'a claim no longer current is told so',
          );
        } finally {
          await other.close();
        }
      } finally {
        await client.close();
      }
    }));

  test('baton mcp --help names every tool the server serves', () =>
    withBaton(sqliteDatabase(), async (db) => {
      const client = await connect(db);
      try {
        const served = (await client.listTools()).tools.map((t) => t.name).sort();
        const help = await baton(db, 'mcp', '--help');
        assert.equal(help.code, 0, help.stderr);
        const named = (/Tools: ([^.]+)\./.exec(help.stdout.replace(/\n/g, ' '))?.[1] ?? '')
          .split(/,\s*/)
          .sort();
        assert.deepEqual(named, served);
      } finally {
        await client.close();
      }
    }));
});
