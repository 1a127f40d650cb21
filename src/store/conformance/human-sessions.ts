/**
 * Sessions with their own TTL, judged on the database clock (moved by the shared test clock, never
 * by sleeping): recovery rescues a session only past its own TTL, and with no leader at all a
 * claim takes over a task whose holder's TTL has passed, fencing the old holder. Then `next`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError } from '../../core/errors.js';
import { HUMAN_TTL_DEFAULT_MS, SESSION_TTL_FALLBACK_MS } from '../../core/session.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const POLICY = { backoffBaseMs: 0, backoffMaxMs: 0 };

export function exerciseHumanSessions(harness: Harness): void {
  describe('session TTL', () => {
    test('the shared test clock moves the database clock of the stores that read it, and only theirs', () =>
      withFixture(harness, async ({ store, clocked, moveClock }) => {
        const moved = await clocked();
        const before = await moved.now();
        await moveClock(3 * HOUR);
        const after = await moved.now();
        assert.ok(after - before >= 3 * HOUR && after - before < 3 * HOUR + MINUTE, `${after - before}`);
        assert.ok(
          Math.abs((await store.now()) - before) < MINUTE,
          'a store without the switch keeps real time',
        );
        const session = await moved.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
        assert.ok(session.startedAt >= after, 'rows are written on the moved clock');
      }));

    test('a human session that heartbeats every 30 minutes keeps its claim for hours while recovery sweeps', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await givenTask(store, 'mine');
        const human = await store.sessions.start({
          kind: 'human',
          host: 'laptop',
          pid: 7,
          ttlMs: HUMAN_TTL_DEFAULT_MS,
        });
        const claim = await store.claims.acquire({ key: 'mine', session: human.id });
        assert.ok(claim.ok);
        for (let half = 1; half <= 8; half++) {
          await givenTask(store, `agent-${half}`);
          const agent = await givenSession(store);
          assert.ok((await store.claims.acquire({ key: `agent-${half}`, session: agent.id })).ok);
          await moveClock(30 * MINUTE);
          const report = await store.recovery.rescueStale({ staleAfterMs: 10_000, policy: POLICY });
          assert.deepEqual(report.sessions, [agent.id], 'the silent agent is rescued, the human is not');
          assert.deepEqual(await store.sessions.heartbeat({ session: human.id }), { ok: true });
        }
        const beat = await store.sessions.heartbeat({ session: human.id, claim: { key: 'mine', epoch: 1 } });
        assert.deepEqual(beat, { ok: true }, 'four hours later the claim is still held');
        await moveClock(HUMAN_TTL_DEFAULT_MS + MINUTE);
        const report = await store.recovery.rescueStale({ staleAfterMs: 10_000, policy: POLICY });
        assert.deepEqual(report.sessions, [human.id], 'past its own TTL the human is rescued too');
        assert.equal(report.claimsReleased, 1);
      }));

    test('with no leader, a claim takes over a task whose holder passed its TTL and fences the holder', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await givenTask(store, 'x');
        const gone = await store.sessions.start({ kind: 'human', host: 'laptop', pid: 7, ttlMs: 2 * HOUR });
        assert.ok((await store.claims.acquire({ key: 'x', session: gone.id })).ok);
        const next = await store.sessions.start({ kind: 'human', host: 'desk', pid: 8, ttlMs: 2 * HOUR });
        await moveClock(HOUR);
        const held = await store.claims.acquire({ key: 'x', session: next.id });
        assert.ok(!held.ok && held.holder.session === gone.id, 'within its TTL the holder keeps it');
        await moveClock(HOUR + MINUTE);
        const taken = await store.claims.acquire({ key: 'x', session: next.id });
        assert.ok(taken.ok && taken.granted && taken.claim.epoch === 2);
        const [old] = await store.claims.history('x');
        assert.equal(old?.outcome, 'expired');
        const stale = { key: 'x', session: gone.id, epoch: 1 };
        assert.equal((await store.claims.release({ ...stale, outcome: 'done' })).ok, false);
        assert.equal((await store.effects.record({ ...stale, kind: 'w' })).ok, false);
        const beat = await store.sessions.heartbeat({ session: gone.id, claim: { key: 'x', epoch: 1 } });
        assert.equal(beat.ok, false, 'the old holder is fenced');
        const released = (await store.audit.list({ key: 'x', type: 'claim:released' }))[0];
        assert.equal(released?.session, gone.id);
        assert.equal(released?.detail['outcome'], 'expired');
        assert.equal(released?.detail['takenBy'], next.id);
        assert.equal(released?.detail['ttlMs'], 2 * HOUR);
      }));

    test('a claim or next asked for by a silent session renews it, so what it gets is not taken over at once', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        for (const key of ['p', 'q', 'r']) await givenTask(store, key);
        const silent = await store.sessions.start({ kind: 'agent', host: 'h', pid: 1, ttlMs: MINUTE });
        const other = await store.sessions.start({ kind: 'human', host: 'desk', pid: 2, ttlMs: 2 * HOUR });
        const heartbeatAt = async (): Promise<number> =>
          (await store.sessions.get(silent.id))?.heartbeatAt ?? 0;
        const heldBySilent = async (key: string): Promise<void> => {
          const taken = await store.claims.acquire({ key, session: other.id });
          assert.ok(!taken.ok && taken.holder.session === silent.id, `${key}: ${JSON.stringify(taken)}`);
        };
        await moveClock(2 * MINUTE);
        const granted = await store.claims.acquire({ key: 'p', session: silent.id });
        assert.ok(granted.ok && granted.granted);
        await heldBySilent('p');
        await moveClock(2 * MINUTE);
        const next = await store.lifecycle.next({ session: silent.id });
        assert.equal(next?.task.key, 'q');
        await heldBySilent('q');
        await moveClock(2 * MINUTE);
        const mine = await store.claims.acquire({ key: 'p', session: silent.id });
        assert.ok(mine.ok && !mine.granted, 'told it holds p already');
        await heldBySilent('p');
        const renewed = await heartbeatAt();
        await moveClock(MINUTE / 2);
        assert.ok((await store.claims.acquire({ key: 'r', session: silent.id })).ok);
        assert.equal(await heartbeatAt(), renewed, 'a session within its TTL is not written');
        const report = await store.recovery.rescueStale({ staleAfterMs: 10_000, policy: POLICY });
        assert.deepEqual(report.sessions, [], 'a renewed session is not rescued');
        await moveClock(2 * MINUTE);
        const taken = await store.claims.acquire({ key: 'p', session: other.id });
        assert.ok(taken.ok && taken.granted, 'silent again, with nothing asked, it loses its claims');
        assert.equal(await heartbeatAt(), renewed, "another session's claim renews nobody else");
      }));

    test('a session without a TTL is held to the fallback; a heartbeat without a key renews every claim', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await givenTask(store, 'a');
        await givenTask(store, 'b');
        const agent = await givenSession(store);
        const other = await givenSession(store);
        assert.ok((await store.claims.acquire({ key: 'a', session: agent.id })).ok);
        assert.ok((await store.claims.acquire({ key: 'b', session: agent.id })).ok);
        const most = SESSION_TTL_FALLBACK_MS - 2_000;
        await moveClock(most);
        assert.deepEqual(await store.sessions.heartbeat({ session: agent.id }), { ok: true });
        const renewed = await store.claims.current('b');
        const beat = renewed === null ? 0 : renewed.heartbeatAt - renewed.claimedAt;
        assert.ok(beat >= most, 'every claim renewed');
        await moveClock(most);
        assert.equal((await store.claims.acquire({ key: 'a', session: other.id })).ok, false);
        await moveClock(3_000);
        const taken = await store.claims.acquire({ key: 'a', session: other.id });
        assert.ok(taken.ok, 'past the fallback it is taken');
        await store.sessions.end(other.id);
        await assert.rejects(store.claims.acquire({ key: 'b', session: other.id }), FencedError);
      }));
  });
}
