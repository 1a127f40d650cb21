/**
 * How a session ended is recorded by the write that ended it, not worked out when read: the
 * rescue writes `rescued` in its own statement, an operator's end writes `operator` and who. Rows
 * from before (a rescued one with no reason) read as they did: `rescued` or `fenced` from state.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSpawnedAgent } from './spawned-agent.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 0, backoffMaxMs: 0 };

export function exerciseSessionEnds(harness: Harness): void {
  describe('session ends', () => {
    test('the rescue records rescued on the session it marks stale, and a report reads it', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const silent = await givenSession(store);
        await givenTask(store, 'k');
        assert.ok((await store.claims.acquire({ key: 'k', session: silent.id })).ok);
        await moveClock(120_000);
        const live = await givenSession(store, 'host-b');
        const rescued = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(rescued.sessions, [silent.id]);
        const read = async (id: number) => {
          const session = await store.sessions.get(id);
          return [session?.state, session?.endReason, session?.endedBy];
        };
        assert.deepEqual(await read(silent.id), ['stale', 'rescued', null]);
        assert.deepEqual(await read(live.id), ['live', null, null], 'the live one is left alone');
        const report = (await store.reports.sessions()).find((row) => row.session === silent.id);
        assert.deepEqual([report?.end, report?.endReason, report?.endedBy], ['rescued', 'rescued', null]);
      }));

    test('a session rescued before the reason was recorded reads rescued or fenced from its state', () =>
      withFixture(harness, async ({ clocked, moveClock, raw, param }) => {
        const store = await clocked();
        const gone = await givenSession(store, 'host-a');
        const back = await store.sessions.start({ kind: 'agent', host: 'host-b', pid: 4242 });
        await moveClock(120_000);
        await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        // As rows rescued before migration 0028 are: stale, no reason.
        await raw.exec(`UPDATE sessions SET end_reason = NULL WHERE state = ${param(1)}`, ['stale']);
        // The fenced one's process came back under a new session with the same host and pid.
        await store.sessions.start({ kind: 'agent', host: 'host-b', pid: 4242 });
        const by = new Map((await store.reports.sessions()).map((row) => [row.session, row]));
        const ends = [gone, back].map((session) => [by.get(session.id)?.end, by.get(session.id)?.endReason]);
        assert.deepEqual(ends, [
          ['rescued', null],
          ['fenced', null],
        ]);
        assert.equal((await store.sessions.get(gone.id))?.endReason, null);
      }));

    test('an operator ending a session records operator and who, in the session, its ledger row and report', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const itself = await givenSession(store);
        assert.deepEqual(await store.sessions.end(session.id, 'operator', 'alice@box'), {
          ended: true,
          jobsRequeued: [],
        });
        await store.sessions.end(itself.id);
        const read = async (id: number) => {
          const row = await store.sessions.get(id);
          return [row?.state, row?.endReason, row?.endedBy];
        };
        assert.deepEqual(await read(session.id), ['ended', 'operator', 'alice@box']);
        assert.deepEqual(await read(itself.id), ['ended', 'stopped', null]);
        const ended = await store.audit.list({ type: 'session:ended' });
        assert.deepEqual(
          ended.map((row) => [row.session, row.detail]),
          [
            [session.id, { how: 'operator', by: 'alice@box' }],
            [itself.id, { how: 'stopped' }],
          ],
        );
        const report = (await store.reports.sessions()).find((row) => row.session === session.id);
        assert.deepEqual(
          [report?.end, report?.endReason, report?.endedBy],
          ['ended', 'operator', 'alice@box'],
        );
        // Ending it again changes nothing: not the reason, not who.
        assert.equal((await store.sessions.end(session.id, 'operator', 'bob@box')).ended, false);
        assert.deepEqual(await read(session.id), ['ended', 'operator', 'alice@box']);
      }));

    test("a session list reads an agent's own pid once spawned, as the session report does, when asked", () =>
      withFixture(harness, async ({ store }) => {
        const { runner, agent } = await givenSpawnedAgent(store, 9191);
        const unspawned = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: runner.pid });
        const listed = new Map(
          (await store.sessions.list({ agentPids: true })).map((row) => [row.id, row.agentPid]),
        );
        const reported = new Map((await store.reports.sessions()).map((row) => [row.session, row.agentPid]));
        const ids = [runner.id, agent.id, unspawned.id];
        assert.deepEqual(
          ids.map((id) => listed.get(id)),
          [null, 9191, null],
        );
        assert.deepEqual(
          ids.map((id) => listed.get(id)),
          ids.map((id) => reported.get(id)),
        );
        const live = await store.sessions.list({ liveOnly: true, agentPids: true });
        assert.equal(live.find((row) => row.id === agent.id)?.agentPid, 9191);
        // The fleet's readers (hosts, takeover) do not ask: no ledger read per agent session.
        const bare = await store.sessions.list({ liveOnly: true });
        assert.equal(bare.find((row) => row.id === agent.id)?.agentPid, null);
      }));

    test("an ended session's effect and escalation are fenced saying so, and change nothing", () =>
      withFixture(harness, async ({ store }) => {
        const ended = await givenSession(store);
        const other = await givenSession(store, 'host-b');
        await givenTask(store, 'k');
        assert.ok((await store.claims.acquire({ key: 'k', session: ended.id })).ok);
        await store.sessions.end(ended.id);
        const taken = await store.claims.acquire({ key: 'k', session: other.id });
        assert.ok(taken.ok);
        const current = { session: other.id, host: 'host-b', since: taken.claim.claimedAt, epoch: 2 };
        const live = await givenSession(store);
        const ledger = (await store.audit.list()).length;
        const effect = (session: number, epoch: number) =>
          store.effects.record({ key: 'k', session, epoch, kind: 'file-write', payload: {} });
        const escalate = (session: number, epoch: number) =>
          store.lifecycle.escalate({
            key: 'k',
            reason: 'stuck',
            by: { name: 'x' },
            claim: { session, epoch },
          });
        const fenced = { ok: false, reason: 'fenced', current, sessionEnded: true };
        assert.deepEqual(await effect(ended.id, 1), fenced);
        assert.deepEqual(await escalate(ended.id, 1), fenced);
        // A live session presenting an old epoch is fenced without it.
        assert.deepEqual(await effect(live.id, 1), { ok: false, reason: 'fenced', current });
        assert.deepEqual(await escalate(live.id, 1), { ok: false, reason: 'fenced', current });
        assert.equal((await store.audit.list()).length, ledger, 'nothing was written');
        assert.equal((await store.tasks.get('k'))?.state, 'open');
      }));
  });
}
