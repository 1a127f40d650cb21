import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError, NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };

/** A task held by a fresh session, at the returned epoch. */
async function givenHeld(store: Store, key = 't') {
  const session = await givenSession(store);
  if ((await store.tasks.get(key)) === null) await givenTask(store, key);
  const result = await store.claims.acquire({ key, session: session.id });
  assert.ok(result.ok);
  return { session: session.id, epoch: result.claim.epoch };
}

/** Nothing was written: no effect row and no ledger row beyond what was there. */
async function assertUnchanged(store: Store, key: string, effects: number, ledger: number): Promise<void> {
  assert.equal((await store.effects.list({ key })).length, effects, 'no effect row');
  assert.equal((await store.audit.list({ limit: 1000 })).length, ledger, 'no ledger row');
}

export function exerciseEffects(harness: Harness): void {
  describe('effects', () => {
    test('accepts an effect under the live claim, lists it and audits it with the epoch', () =>
      withFixture(harness, async ({ store }) => {
        const { session, epoch } = await givenHeld(store);
        const payload = { path: 'src/a.ts', lines: [1, 2], note: 'ünïcødé ✓', nested: { ok: true, n: null } };
        const result = await store.effects.record({ key: 't', session, epoch, kind: 'file-write', payload });
        assert.ok(result.ok);
        assert.equal(result.effect.key, 't');
        assert.equal(result.effect.session, session);
        assert.equal(result.effect.epoch, epoch);
        assert.equal(result.effect.kind, 'file-write');
        assert.deepEqual(result.effect.payload, payload);
        assert.deepEqual(await store.effects.list({ key: 't' }), [result.effect]);
        const [entry] = await store.audit.list({ type: 'effect:recorded' });
        assert.equal(entry?.key, 't');
        assert.equal(entry?.session, session);
        assert.equal(entry?.epoch, epoch);
        assert.equal(entry?.at, result.effect.recordedAt);
        assert.deepEqual(entry?.detail, { effect: result.effect.id, kind: 'file-write' });
        const bare = await store.effects.record({ key: 't', session, epoch, kind: 'note' });
        assert.ok(bare.ok);
        assert.deepEqual(bare.effect.payload, {});
        assert.deepEqual(await store.effects.list({ key: 't', afterId: result.effect.id }), [bare.effect]);
        assert.deepEqual(await store.effects.list({ key: 'nobody' }), []);
      }));

    test('refuses a wrong epoch or a wrong session with the current holder, and writes nothing', () =>
      withFixture(harness, async ({ store }) => {
        const { session, epoch } = await givenHeld(store);
        const other = await givenSession(store, 'host-b');
        const ledger = (await store.audit.list()).length;
        const wrongEpoch = await store.effects.record({ key: 't', session, epoch: epoch + 1, kind: 'w' });
        const wrongSession = await store.effects.record({ key: 't', session: other.id, epoch, kind: 'w' });
        for (const result of [wrongEpoch, wrongSession]) {
          assert.ok(!result.ok);
          assert.equal(result.reason, 'fenced');
          assert.equal(result.current?.session, session);
          assert.equal(result.current?.epoch, epoch);
        }
        await assertUnchanged(store, 't', 0, ledger);
      }));

    test('refuses the old epoch once the claim was released and granted again', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenHeld(store);
        await store.claims.release({
          key: 't',
          session: first.session,
          epoch: first.epoch,
          outcome: 'released',
        });
        const released = await store.effects.record({
          key: 't',
          session: first.session,
          epoch: first.epoch,
          kind: 'w',
        });
        assert.deepEqual(released, { ok: false, reason: 'fenced', current: null });
        const second = await givenHeld(store);
        assert.equal(second.epoch, first.epoch + 1);
        const ledger = (await store.audit.list()).length;
        const stale = await store.effects.record({
          key: 't',
          session: first.session,
          epoch: first.epoch,
          kind: 'w',
        });
        assert.ok(!stale.ok);
        assert.equal(stale.current?.epoch, second.epoch);
        await assertUnchanged(store, 't', 0, ledger);
        assert.ok(
          (await store.effects.record({ key: 't', session: second.session, epoch: second.epoch, kind: 'w' }))
            .ok,
        );
      }));

    test('refuses an ended session, and a session rescued after its heartbeats stopped', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const ended = await givenHeld(store, 'e');
        await store.sessions.end(ended.session);
        const r1 = await store.effects.record({
          key: 'e',
          session: ended.session,
          epoch: ended.epoch,
          kind: 'w',
        });
        assert.equal(r1.ok, false);
        const silent = await givenHeld(store, 's');
        await moveClock(150);
        await store.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY });
        const r2 = await store.effects.record({
          key: 's',
          session: silent.session,
          epoch: silent.epoch,
          kind: 'w',
        });
        assert.equal(r2.ok, false);
        assert.equal((await store.audit.list({ type: 'effect:recorded' })).length, 0);
      }));

    test('names an unknown task or session, and refuses a kind or payload no engine can store', () =>
      withFixture(harness, async ({ store }) => {
        const { session, epoch } = await givenHeld(store);
        const ledger = (await store.audit.list()).length;
        await assert.rejects(store.effects.record({ key: 'nope', session, epoch, kind: 'w' }), NotFoundError);
        await assert.rejects(
          store.effects.record({ key: 't', session: 999_999, epoch, kind: 'w' }),
          NotFoundError,
        );
        const bad = [
          { kind: '' },
          { kind: 'has space' },
          { kind: 'x'.repeat(101) },
          { kind: 'w', payload: { nul: 'a\u0000b' } },
          // Half of a character, in a value or a key: PostgreSQL's jsonb refuses its \ud800 escape.
          { kind: 'w', payload: { half: 'a\ud800b' } },
          { kind: 'w', payload: { ['k\udfff']: 1 } },
          { kind: 'w', payload: { n: Number.NaN } },
          { kind: 'w', payload: 'x'.repeat(20_000) },
        ];
        for (const effect of bad) {
          await assert.rejects(
            store.effects.record({ key: 't', session, epoch, ...effect }),
            InvalidInputError,
          );
        }
        const literal = await store.effects.record({
          key: 't',
          session,
          epoch,
          kind: 'w',
          payload: '\\u0000',
        });
        assert.ok(literal.ok);
        assert.equal(literal.effect.payload, '\\u0000');
        await assertUnchanged(store, 't', 1, ledger + 1);
      }));

    test('keeps the effects table append-only', () =>
      withFixture(harness, async ({ store, raw }) => {
        const { session, epoch } = await givenHeld(store);
        assert.ok((await store.effects.record({ key: 't', session, epoch, kind: 'w' })).ok);
        await assert.rejects(raw.exec(`UPDATE effects SET epoch = 99`), /append-only/);
        await assert.rejects(raw.exec(`DELETE FROM effects`), /append-only/);
      }));

    test('accepts no stale effect while another process re-claims the task under it', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        await givenTask(store, 'r');
        for (let round = 0; round < 5; round++) {
          const held = await givenHeld(store, 'r');
          const writes = Array.from({ length: 20 }, (_, index) =>
            store.effects.record({
              key: 'r',
              session: held.session,
              epoch: held.epoch,
              kind: 'w',
              payload: { i: index },
            }),
          );
          const takeover = (async () => {
            await other.claims.release({
              key: 'r',
              session: held.session,
              epoch: held.epoch,
              outcome: 'released',
            });
            const successor = await other.sessions.start({ kind: 'agent', host: 'host-b', pid: 2 });
            const granted = await other.claims.acquire({ key: 'r', session: successor.id });
            assert.ok(granted.ok);
            await other.claims.release({
              key: 'r',
              session: successor.id,
              epoch: granted.claim.epoch,
              outcome: 'released',
            });
          })();
          await Promise.all([...writes, takeover]);
        }
        // In ledger order, every accepted effect carries the newest granted epoch and a live claim.
        let epoch = 0;
        let live = false;
        for (const entry of await store.audit.list({ key: 'r', limit: 1000 })) {
          if (entry.type === 'claim:granted') [epoch, live] = [entry.epoch ?? -1, true];
          if (entry.type === 'claim:released') live = false;
          if (entry.type === 'effect:recorded') {
            assert.ok(
              live && entry.epoch === epoch,
              `effect #${entry.id} at epoch ${entry.epoch} (newest ${epoch}, live ${live})`,
            );
          }
        }
        await other.close();
      }));
  });
}
