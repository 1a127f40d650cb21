/**
 * `baton mcp` under the SDK's Client when its claim is taken away: force-released by an operator,
 * or rescued and taken over. The next heartbeat says ok:false and what to do; no effect is accepted.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Coordinator } from '../../coordinator/coordinator.js';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { connect, structured, withBaton } from '../../../test/support/mcp-client.js';

describe('baton mcp, fenced', () => {
  test('a client whose claim was force-released gets ok:false on its next heartbeat and may not record effects', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 't-2', title: 'taken away' });
      const client = await connect(db);
      try {
        const claimed = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 't-2' } }));
        assert.equal(claimed.ok, true);
        const ref = { key: 't-2', epoch: claimed.epoch as number };
        assert.equal(structured(await client.callTool({ name: 'baton_heartbeat', arguments: ref })).ok, true);
        const forced = await new Coordinator(store).forceRelease({
          key: 't-2',
          reason: 'stuck for an hour',
          by: { name: 'operator' },
        });
        assert.ok(forced.ok);
        const fenced = structured(await client.callTool({ name: 'baton_heartbeat', arguments: ref }));
        assert.equal(fenced.ok, false);
        assert.match(
          fenced.message ?? '',
          /^Baton: the claim on t-2 at epoch 1 is not current: no one holds it now\. /,
        );
        assert.match(fenced.message ?? '', /Stop working on t-2 now/);
        const effect = structured(
          await client.callTool({
            name: 'baton_effect',
            arguments: { ...ref, kind: 'push', payload: { sha: 'abc' } },
          }),
        );
        assert.equal(effect.ok, false, 'no effect is accepted from a force-released claim');
        assert.deepEqual(await store.effects.list({ key: 't-2' }), []);
        const row = (await store.audit.list({ key: 't-2' })).find((e) => e.type === 'claim:force_released');
        assert.equal(row?.epoch, ref.epoch);
      } finally {
        await client.close();
      }
    }));

  test("tells an epoch never granted from the live epoch of another session, in the CLI's words", () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 't-3', title: 'held elsewhere' });
      const other = await store.sessions.start({ kind: 'agent', host: 'other-box', pid: 1 });
      assert.ok((await store.claims.acquire({ key: 't-3', session: other.id })).ok);
      const client = await connect(db);
      try {
        const beat = async (epoch: number) =>
          structured(await client.callTool({ name: 'baton_heartbeat', arguments: { key: 't-3', epoch } }));
        const held = `it is held by session ${other.id} on other-box since \\S+ \\(epoch 1\\)`;
        const never = await beat(7);
        assert.equal(never.ok, false);
        assert.match(
          never.message ?? '',
          new RegExp(`^Baton: epoch 7 was never granted for t-3: ${held}\\. Stop `),
        );
        const notOurs = await beat(1);
        assert.equal(notOurs.ok, false);
        assert.match(
          notOurs.message ?? '',
          new RegExp(`^Baton: the claim on t-3 at epoch 1 is not this session's: ${held}\\. `),
        );
        assert.equal((notOurs.holder as { session: number }).session, other.id);
        assert.equal((await store.claims.current('t-3'))?.session, other.id, 'the claim stays where it was');
      } finally {
        await client.close();
      }
    }));

  test("an epoch other than its own claim's is told the right one, not to stop (0059)", () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 't-4', title: 'mine' });
      const client = await connect(db);
      try {
        const claimed = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 't-4' } }));
        assert.equal(claimed.epoch, 1);
        const beat = async (epoch: number) =>
          structured(await client.callTool({ name: 'baton_heartbeat', arguments: { key: 't-4', epoch } }));
        const wrong = await beat(2);
        assert.equal(wrong.ok, false);
        assert.equal(wrong.reason, 'wrong_epoch');
        assert.match(
          wrong.message ?? '',
          new RegExp(
            `^Baton: epoch 2 was never granted for t-4: you hold t-4 at epoch 1 ` +
              `\\(session ${String(claimed.session)} ` +
              'on \\S+ since \\S+\\); use that epoch\\. ' +
              'Nothing changed: keep working on t-4, and give epoch 1 from now on\\.$',
          ),
        );
        assert.doesNotMatch(wrong.message ?? '', /Stop|fenced/);
        assert.equal((await beat(1)).ok, true, 'the claim is still current at its own epoch');
        assert.equal((await store.claims.current('t-4'))?.epoch, 1);
        // A lower epoch is a claim of its own that ended: work under it may be overlapped, so a fence.
        const release = { key: 't-4', epoch: 1, outcome: 'released' };
        assert.equal(
          structured(await client.callTool({ name: 'baton_release', arguments: release })).ok,
          true,
        );
        const again = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 't-4' } }));
        assert.equal(again.epoch, 2);
        const old = await beat(1);
        assert.deepEqual([old.ok, old.reason], [false, 'fenced']);
        assert.match(old.message ?? '', /the claim on t-4 at epoch 1 is no longer current/);
        assert.doesNotMatch(old.message ?? '', /keep working/);
      } finally {
        await client.close();
      }
    }));

  test('a client whose claim was rescued gets ok:false on its next heartbeat, naming who took over', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 't-1', title: 'fenced' });
      const client = await connect(db);
      try {
        const claimed = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 't-1' } }));
        assert.equal(claimed.ok, true);
        const ref = { key: 't-1', epoch: claimed.epoch as number };
        const beat = structured(await client.callTool({ name: 'baton_heartbeat', arguments: ref }));
        assert.equal(beat.ok, true);
        // Its session goes silent past the threshold and is rescued; another session takes the task.
        await new Promise((r) => setTimeout(r, 50));
        const rescued = await store.recovery.rescueStale({
          staleAfterMs: 1,
          policy: { backoffBaseMs: 0, backoffMaxMs: 0 },
        });
        assert.ok(rescued.sessions.includes(claimed.session as number));
        const other = await store.sessions.start({ kind: 'agent', host: 'other-box', pid: 1 });
        assert.ok((await store.claims.acquire({ key: 't-1', session: other.id })).ok);
        const fenced = structured(await client.callTool({ name: 'baton_heartbeat', arguments: ref }));
        assert.equal(fenced.ok, false);
        assert.equal(fenced.reason, 'fenced');
        assert.equal((fenced.holder as { session: number }).session, other.id);
        assert.match(
          fenced.message ?? '',
          new RegExp(
            `is not current: its session has ended, and t-1 is held by session ${other.id} on other-box`,
          ),
        );
        assert.match(fenced.message ?? '', /Stop working on t-1 now/);
        const effect = structured(
          await client.callTool({
            name: 'baton_effect',
            arguments: { ...ref, kind: 'push', payload: { sha: 'abc' } },
          }),
        );
        assert.equal(effect.ok, false, 'no effect is accepted from a fenced claim');
        assert.deepEqual(await store.effects.list({ key: 't-1' }), []);
        const status = structured(await client.callTool({ name: 'baton_status', arguments: {} }));
        assert.equal(status.state, 'stale');
        assert.deepEqual(
          (status.claims as { key: string; current: boolean }[]).map((c) => [c.key, c.current]),
          [['t-1', false]],
        );
        // Its own session was rescued: the next claim runs under a new one.
        await store.tasks.add({ key: 't-2', title: 'next' });
        const next = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 't-2' } }));
        assert.equal(next.ok, true);
        assert.notEqual(next.session, claimed.session);
        assert.equal((await store.sessions.get(next.session as number))?.state, 'live');
      } finally {
        await client.close();
      }
    }));
});
