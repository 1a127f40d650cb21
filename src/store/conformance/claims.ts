import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError, NotFoundError } from '../../core/errors.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseClaims(harness: Harness): void {
  describe('claims', () => {
    test('grants a free task with epoch 1 and records the holder on the task', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await givenTask(store, 't');
        const result = await store.claims.acquire({ key: 't', session: session.id });
        assert.ok(result.ok);
        assert.equal(result.granted, true);
        assert.equal(result.claim.epoch, 1);
        assert.equal(result.claim.session, session.id);
        assert.equal(result.claim.releasedAt, null);
        const task = await store.tasks.get('t');
        assert.equal(task?.epoch, 1);
        assert.equal(task?.holder?.session, session.id);
        assert.deepEqual(await store.claims.current('t'), result.claim);
      }));

    test('returns the same epoch when the holder claims again', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await givenTask(store, 't');
        const first = await store.claims.acquire({ key: 't', session: session.id });
        const again = await store.claims.acquire({ key: 't', session: session.id });
        assert.ok(first.ok && again.ok);
        assert.equal(again.granted, false);
        assert.equal(again.claim.epoch, first.claim.epoch);
        assert.equal((await store.claims.history('t')).length, 1);
      }));

    test('tells a loser which session holds the task, on which host, since when', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store, 'host-a');
        const second = await givenSession(store, 'host-b');
        await givenTask(store, 't');
        const won = await store.claims.acquire({ key: 't', session: first.id });
        const lost = await store.claims.acquire({ key: 't', session: second.id });
        assert.ok(won.ok);
        assert.equal(lost.ok, false);
        assert.ok(!lost.ok);
        assert.deepEqual(lost.holder, {
          session: first.id,
          host: 'host-a',
          since: won.claim.claimedAt,
          epoch: 1,
        });
      }));

    test('grows the epoch with every grant', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        await givenTask(store, 't');
        const epochs: number[] = [];
        for (const session of [first, second, first, second]) {
          const result = await store.claims.acquire({ key: 't', session: session.id });
          assert.ok(result.ok);
          epochs.push(result.claim.epoch);
          const rel = await store.claims.release({
            key: 't',
            session: session.id,
            epoch: result.claim.epoch,
            outcome: 'released',
          });
          assert.deepEqual(rel, { ok: true });
        }
        assert.deepEqual(epochs, [1, 2, 3, 4]);
        const history = await store.claims.history('t');
        assert.deepEqual(
          history.map((claim) => [claim.epoch, claim.outcome]),
          [
            [1, 'released'],
            [2, 'released'],
            [3, 'released'],
            [4, 'released'],
          ],
        );
      }));

    test('refuses a release carrying an older epoch and changes nothing', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store, 'host-a');
        const second = await givenSession(store, 'host-b');
        await givenTask(store, 't');
        await store.claims.acquire({ key: 't', session: first.id });
        await store.claims.release({ key: 't', session: first.id, epoch: 1, outcome: 'failed' });
        const now = await store.claims.acquire({ key: 't', session: second.id });
        assert.ok(now.ok);
        const ledger = (await store.audit.list()).length;
        const stale = await store.claims.release({ key: 't', session: first.id, epoch: 1, outcome: 'done' });
        assert.equal(stale.ok, false);
        assert.ok(!stale.ok);
        assert.equal(stale.current?.session, second.id);
        assert.equal(stale.current?.epoch, 2);
        assert.deepEqual(await store.claims.current('t'), now.claim);
        assert.equal((await store.audit.list()).length, ledger);
      }));

    test('refuses a release by another session presenting the right epoch', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        await givenTask(store, 't');
        await store.claims.acquire({ key: 't', session: first.id });
        const result = await store.claims.release({
          key: 't',
          session: second.id,
          epoch: 1,
          outcome: 'done',
        });
        assert.equal(result.ok, false);
        assert.equal((await store.claims.current('t'))?.session, first.id);
      }));

    test('fences the release of an ended or rescued session, saying so and naming who holds the task now', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const ended = await givenSession(store);
        const other = await givenSession(store, 'host-b');
        await givenTask(store, 'k');
        assert.ok((await store.claims.acquire({ key: 'k', session: ended.id })).ok);
        await store.sessions.end(ended.id);
        const release = async (session: number, epoch: number) => {
          const ledger = (await store.audit.list()).length;
          const result = await store.claims.release({ key: 'k', session, epoch, outcome: 'done' });
          assert.equal((await store.audit.list()).length, ledger, 'a fenced release appends nothing');
          return result;
        };
        const fenced = { ok: false, reason: 'fenced', current: null, sessionEnded: true };
        assert.deepEqual(await release(ended.id, 1), fenced, 'no one holds k');
        const taken = await store.claims.acquire({ key: 'k', session: other.id });
        assert.ok(taken.ok);
        const current = { session: other.id, host: 'host-b', since: taken.claim.claimedAt, epoch: 2 };
        assert.deepEqual(await release(ended.id, 1), { ...fenced, current });
        assert.deepEqual(await release(ended.id, 2), { ...fenced, current }, 'whatever the epoch');
        const live = await givenSession(store);
        assert.deepEqual(await release(live.id, 2), { ok: false, reason: 'fenced', current }, 'a live one');
        assert.equal((await store.tasks.get('k'))?.state, 'open', 'the task is not finished');
        // A session rescued as stale (its heartbeats stopped) is told the same.
        await moveClock(120_000);
        const policy = { backoffBaseMs: 0, backoffMaxMs: 0 };
        await store.recovery.rescueStale({ staleAfterMs: 60_000, policy });
        assert.equal((await store.sessions.get(other.id))?.state, 'stale');
        assert.deepEqual(await release(other.id, 2), fenced, 'its claim was recovered with it');
      }));

    test('refuses a heartbeat carrying an older epoch', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        await givenTask(store, 't');
        await store.claims.acquire({ key: 't', session: first.id });
        assert.deepEqual(
          await store.sessions.heartbeat({ session: first.id, claim: { key: 't', epoch: 1 } }),
          {
            ok: true,
          },
        );
        await store.claims.release({ key: 't', session: first.id, epoch: 1, outcome: 'released' });
        await store.claims.acquire({ key: 't', session: second.id });
        const hb = await store.sessions.heartbeat({ session: first.id, claim: { key: 't', epoch: 1 } });
        assert.equal(hb.ok, false);
        assert.ok(!hb.ok);
        assert.equal(hb.current?.session, second.id);
        const claim = await store.claims.current('t');
        assert.equal(claim?.session, second.id);
        assert.equal(claim?.heartbeatAt, claim?.claimedAt);
      }));

    test('refuses a claim on an unknown task or by an unknown or ended session', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await givenTask(store, 't');
        await assert.rejects(store.claims.acquire({ key: 'nope', session: session.id }), NotFoundError);
        await assert.rejects(store.claims.acquire({ key: 't', session: 999999 }), NotFoundError);
        await store.sessions.end(session.id);
        await assert.rejects(store.claims.acquire({ key: 't', session: session.id }), FencedError);
        assert.equal(await store.claims.current('t'), null);
        assert.equal((await store.tasks.get('t'))?.epoch, 0);
      }));

    test('enforces one live claim per task by a constraint, not only by the query', () =>
      withFixture(harness, async ({ store, raw, param }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        await givenTask(store, 't');
        await store.claims.acquire({ key: 't', session: first.id });
        const [task] = await raw.exec('SELECT id FROM tasks');
        await assert.rejects(
          raw.exec(
            `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
             SELECT task_id, ${param(1)}, 2, claimed_at, heartbeat_at FROM claims`,
            [second.id],
          ),
          /unique|UNIQUE/,
        );
        assert.ok(task !== undefined);
        assert.equal((await store.claims.history('t')).length, 1);
      }));

    test('grants one of many concurrent claimers and tells every other who won', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          await givenTask(store, 't');
          const sessions = await Promise.all(
            Array.from({ length: 12 }, (_, index) => givenSession(store, `h${index}`)),
          );
          const results = await Promise.all(
            sessions.map((session, index) =>
              (index % 2 === 0 ? store : other).claims.acquire({ key: 't', session: session.id }),
            ),
          );
          const winners = results.filter((result) => result.ok);
          assert.equal(winners.length, 1);
          const winner = winners[0];
          assert.ok(winner?.ok);
          for (const result of results) {
            if (!result.ok) assert.equal(result.holder.session, winner.claim.session);
          }
          assert.equal((await store.tasks.get('t'))?.epoch, 1);
        } finally {
          await other.close();
        }
      }));
  });
}
