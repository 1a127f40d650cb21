import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GENESIS_HASH, rowId, type Checkpoint } from '../../core/ledger.js';
import { DEFAULT_RETRY_POLICY } from '../../core/retry.js';
import { givenSpawnedAgent } from './spawned-agent.js';
import { givenSession, givenTask, sleep, withFixture, type Harness } from './harness.js';
import type { Store } from '../store.js';

/** A checkpoint with made-up hashes: the store keeps checkpoints, it never checks their hashes. */
function checkpoint(over: Partial<Checkpoint> & Pick<Checkpoint, 'seq' | 'firstId' | 'lastId'>): Checkpoint {
  return {
    kind: 'seal',
    rowCount: over.lastId - over.firstId + 1,
    root: 'r'.repeat(64),
    prevHash: GENESIS_HASH,
    hash: `${over.seq}`.padStart(64, 'h'),
    keyId: 'k'.repeat(16),
    signature: 'sig',
    sealedAt: 1_700_000_000_000,
    throughSeq: null,
    ...over,
  };
}

async function activity(store: Store): Promise<void> {
  const session = await givenSession(store, 'box-1');
  await givenTask(store, 'a');
  await givenTask(store, 'b');
  await store.claims.acquire({ key: 'a', session: session.id });
  await store.claims.release({ key: 'a', session: session.id, epoch: 1, outcome: 'failed' });
}

export function exerciseLedger(harness: Harness): void {
  describe('ledger seals', () => {
    test('hands out unsealed rows oldest first, every column by name, only those after the newest checkpoint', () =>
      withFixture(harness, async ({ store }) => {
        await activity(store);
        const all = await store.audit.list();
        const first = await store.ledger.unsealed({ limit: 100 });
        assert.equal(first.newest, null);
        assert.equal(first.sealedThrough, 0);
        assert.deepEqual(
          first.rows.map(rowId),
          all.map((entry) => entry.id),
        );
        const granted = first.rows.find((row) => row['type'] === 'claim:granted');
        assert.ok(granted !== undefined);
        for (const column of [
          'id',
          'at',
          'type',
          'task_key',
          'job_id',
          'session_id',
          'host',
          'epoch',
          'detail',
        ]) {
          assert.ok(column in granted, `column ${column} is read`);
        }
        assert.equal(granted['task_key'], 'a');
        assert.equal(granted['host'], 'box-1');
        const through = all[2]?.id ?? 0;
        assert.equal(
          await store.ledger.append(checkpoint({ seq: 1, firstId: 1, lastId: through }), new Uint8Array([1])),
          true,
        );
        const next = await store.ledger.unsealed({ limit: 2 });
        assert.equal(next.newest?.seq, 1);
        assert.equal(next.sealedThrough, through);
        assert.deepEqual(
          next.rows.map(rowId),
          all.slice(3, 5).map((entry) => entry.id),
        );
        assert.ok(next.now >= (all.at(-1)?.at ?? 0));
      }));

    test('appends a checkpoint only after the newest one, and one of two racing sealers wins', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        await activity(store);
        const other = await openAnother();
        const one = checkpoint({ seq: 1, firstId: 1, lastId: 2 });
        const results = await Promise.all([
          store.ledger.append(one, new Uint8Array(40)),
          other.ledger.append(one, new Uint8Array(40)),
        ]);
        assert.deepEqual([...results].sort(), [false, true]);
        assert.equal(
          await store.ledger.append(
            checkpoint({ seq: 3, firstId: 3, lastId: 4, prevHash: one.hash }),
            new Uint8Array(40),
          ),
          false,
        );
        assert.equal(
          await store.ledger.append(
            checkpoint({ seq: 2, firstId: 3, lastId: 4, prevHash: 'x'.repeat(64) }),
            new Uint8Array(40),
          ),
          false,
        );
        // A seal whose range does not start right after the last sealed row (a sealer that read the
        // newest checkpoint late) is refused, whatever its chain says.
        const overlap = checkpoint({ seq: 2, firstId: 2, lastId: 4, prevHash: one.hash });
        assert.equal(await store.ledger.append(overlap, new Uint8Array(40)), false);
        const two = checkpoint({ seq: 2, firstId: 3, lastId: 4, prevHash: one.hash });
        assert.equal(await store.ledger.append(two, new Uint8Array([7, 8])), true);
        assert.deepEqual(await store.ledger.checkpoints({ afterSeq: 0, limit: 10 }), [one, two]);
        assert.deepEqual(await store.ledger.checkpoints({ afterSeq: 1, limit: 10, kind: 'seal' }), [two]);
        assert.deepEqual(await store.ledger.leaves(2), new Uint8Array([7, 8]));
        assert.equal(await store.ledger.leaves(9), null);
      }));

    test('keeps checkpoints and keys append-only', () =>
      withFixture(harness, async ({ store, raw }) => {
        await store.ledger.addKey({ id: 'abcdef0123456789', publicKey: 'cHVibGlj' });
        await store.ledger.append(checkpoint({ seq: 1, firstId: 1, lastId: 1 }), new Uint8Array(40));
        await assert.rejects(raw.exec(`UPDATE audit_checkpoints SET root = 'x'`), /append-only/);
        await assert.rejects(raw.exec('DELETE FROM audit_checkpoints'), /append-only/);
        await assert.rejects(raw.exec(`UPDATE ledger_keys SET public_key = 'x'`), /append-only/);
        await assert.rejects(raw.exec('DELETE FROM ledger_keys'), /append-only/);
        await assert.rejects(
          store.ledger.addKey({ id: 'abcdef0123456789', publicKey: 'b3RoZXI=' }),
          /registered already/,
        );
        const keys = await store.ledger.keys();
        assert.deepEqual(
          keys.map((key) => [key.id, key.publicKey]),
          [['abcdef0123456789', 'cHVibGlj']],
        );
        const added = await store.audit.list({ type: 'ledger:key-added' });
        assert.deepEqual(
          added.map((entry) => entry.detail),
          [{ keyId: 'abcdef0123456789', publicKey: 'cHVibGlj' }],
        );
      }));

    test('retires a key with one ledger row; refuses an unknown key, a second retirement and the last key', () =>
      withFixture(harness, async ({ store }) => {
        const ids = [...'abcdef'].map((letter) => letter.repeat(16));
        for (const id of ids) await store.ledger.addKey({ id, publicKey: `${id}=` });
        const [first = '', ...others] = ids;
        await assert.rejects(store.ledger.retireKey({ id: '9'.repeat(16) }), /ledger key 9+ not found/);
        const retired = await store.ledger.retireKey({ id: first, actor: 'frank@box' });
        const [row] = await store.audit.list({ type: 'ledger:key-retired' });
        assert.deepEqual([retired.keyId, retired.row, retired.at], [first, row?.id, row?.at]);
        assert.deepEqual(row?.detail, { keyId: first, by: 'frank@box' });
        await assert.rejects(store.ledger.retireKey({ id: first }), /is retired already/);
        // The other five at once: four are retired, the one left last is refused.
        const all = await Promise.allSettled(others.map((id) => store.ledger.retireKey({ id })));
        const refused = all.filter((result) => result.status === 'rejected');
        assert.equal(refused.length, 1, 'exactly one refused');
        assert.match(String(refused[0]?.reason), /is the last key that is not retired/);
        assert.equal((await store.audit.list({ type: 'ledger:key-retired' })).length, 5);
        assert.equal(
          (await store.ledger.keys()).length,
          6,
          'the keys stay registered: checkpoints name them',
        );
      }));

    test('reads rows by task, session, host, type and time, in id order, with their range and extent', () =>
      withFixture(harness, async ({ store }) => {
        await activity(store);
        const all = await store.audit.list();
        const ids = (rows: readonly Record<string, unknown>[]): number[] => rows.map(rowId);
        const base = { afterId: 0, limit: 100 };
        assert.deepEqual(
          ids(await store.ledger.rows({ ...base, key: 'a' })),
          all.filter((entry) => entry.key === 'a').map((entry) => entry.id),
        );
        const sessionId = all[0]?.session ?? 0;
        assert.deepEqual(
          ids(await store.ledger.rows({ ...base, session: sessionId })),
          all.filter((entry) => entry.session === sessionId).map((entry) => entry.id),
        );
        assert.deepEqual(
          ids(await store.ledger.rows({ ...base, host: 'box-1' })),
          all.filter((entry) => entry.host === 'box-1').map((entry) => entry.id),
        );
        assert.deepEqual(
          ids(await store.ledger.rows({ ...base, type: 'task:added' })),
          all.filter((entry) => entry.type === 'task:added').map((entry) => entry.id),
        );
        const mid = all[2];
        assert.ok(mid !== undefined);
        const since = await store.ledger.rows({ ...base, since: mid.at });
        assert.deepEqual(
          ids(since),
          all.filter((entry) => entry.at >= mid.at).map((entry) => entry.id),
        );
        const until = await store.ledger.rows({ ...base, until: mid.at });
        assert.deepEqual(
          ids(until),
          all.filter((entry) => entry.at < mid.at).map((entry) => entry.id),
        );
        assert.deepEqual(ids(await store.ledger.rows({ afterId: 1, throughId: 3, limit: 100 })), [2, 3]);
        assert.equal(
          await store.ledger.newestAt(1, 3),
          Math.max(...all.slice(0, 3).map((entry) => entry.at)),
        );
        assert.equal(await store.ledger.newestAt(900, 901), null);
        assert.deepEqual(await store.ledger.extent(), {
          firstId: all[0]?.id,
          lastId: all.at(-1)?.id,
        });
      }));

    test('prunes rows and checkpoints with a prune record in one step, only after the newest, attesting the last', () =>
      withFixture(harness, async ({ store }) => {
        await activity(store);
        const one = checkpoint({ seq: 1, firstId: 1, lastId: 2 });
        const two = checkpoint({ seq: 2, firstId: 3, lastId: 4, prevHash: one.hash });
        await store.ledger.append(one, new Uint8Array(80));
        await store.ledger.append(two, new Uint8Array(80));
        const record = checkpoint({
          seq: 3,
          kind: 'prune',
          firstId: 1,
          lastId: 2,
          rowCount: 2,
          root: one.hash,
          prevHash: two.hash,
          throughSeq: 1,
        });
        assert.equal(await store.ledger.prune({ ...record, root: 'z'.repeat(64) }), null);
        assert.equal(await store.ledger.prune({ ...record, seq: 4 }), null);
        assert.equal((await store.audit.list()).length, 5);
        assert.deepEqual(await store.ledger.prune(record), { removed: 2 });
        const left = await store.audit.list();
        assert.deepEqual(
          left.map((entry) => entry.id),
          [3, 4, 5, 6],
        );
        assert.deepEqual(left.at(-1)?.detail, {
          checkpoint: 3,
          firstId: 1,
          lastId: 2,
          rowCount: 2,
          removed: 2,
        });
        assert.equal(left.at(-1)?.type, 'ledger:pruned');
        assert.deepEqual(
          (await store.ledger.checkpoints({ afterSeq: 0, limit: 10 })).map((sealed) => [
            sealed.seq,
            sealed.kind,
          ]),
          [
            [2, 'seal'],
            [3, 'prune'],
          ],
        );
        assert.equal((await store.ledger.unsealed({ limit: 10 })).sealedThrough, 4);
      }));
  });

  describe('session report', () => {
    test('reports each session: host, pid, how it ended, issues worked with epochs and outcomes, jobs, time held', () =>
      withFixture(harness, async ({ store }) => {
        const first = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 11 });
        const second = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 22 });
        const gone = await store.sessions.start({ kind: 'agent', host: 'box-3', pid: 33 });
        await givenTask(store, 'x');
        await store.claims.acquire({ key: 'x', session: first.id });
        await store.claims.release({ key: 'x', session: first.id, epoch: 1, outcome: 'failed' });
        await store.claims.acquire({ key: 'x', session: second.id });
        await store.jobs.enqueue({ key: 'y' });
        await store.jobs.claimNext({ session: second.id });
        await store.sessions.end(first.id);
        // b and gone stop heartbeating and are rescued; b's process was alive: it rejoins.
        await sleep(5);
        const rescued = await store.recovery.rescueStale({ staleAfterMs: 1, policy: DEFAULT_RETRY_POLICY });
        assert.deepEqual([...rescued.sessions].sort(), [second.id, gone.id].sort());
        const again = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 22 });
        const all = await store.reports.sessions();
        const by = new Map(all.map((report) => [report.session, report]));
        assert.deepEqual(
          all.map((report) => report.session),
          [first.id, second.id, gone.id, again.id],
        );
        assert.deepEqual(
          all.map((report) => [report.host, report.pid, report.kind, report.end]),
          [
            ['box-1', 11, 'agent', 'ended'],
            ['box-2', 22, 'daemon', 'fenced'],
            ['box-3', 33, 'agent', 'rescued'],
            ['box-2', 22, 'daemon', 'live'],
          ],
        );
        const ra = by.get(first.id);
        assert.deepEqual(
          ra?.issuesWorked.map((worked) => [worked.key, worked.epoch, worked.outcome]),
          [['x', 1, 'failed']],
        );
        assert.ok(ra !== undefined && ra.endedAt !== null && ra.heldMs >= 0 && ra.jobs === 0);
        const rb = by.get(second.id);
        assert.deepEqual(
          rb?.issuesWorked.map((worked) => [worked.key, worked.epoch, worked.outcome]),
          [['x', 2, 'recovered']],
        );
        assert.deepEqual([rb?.jobs, rb?.attempts, rb?.escalations], [1, 1, 0]);
        assert.deepEqual(
          (await store.reports.sessions({ host: 'box-2' })).map((report) => report.session),
          [second.id, again.id],
        );
        const later = (await store.now()) + 60_000;
        assert.deepEqual(
          (await store.reports.sessions({ since: later })).map((report) => report.session),
          [again.id],
        );
        assert.deepEqual((await store.reports.sessions({ until: first.startedAt })).length, 0);
      }));

    test('reports why each ended session ended, each run by its outcome, and an agent by its own pid', () =>
      withFixture(harness, async ({ store, raw, param }) => {
        // As a runner does: the agent's session carries the runner's pid; its process's is attached.
        const { runner, agent, guard } = await givenSpawnedAgent(store, 9191);
        await store.claims.release({ key: 'k', session: agent.id, epoch: 1, outcome: 'failed' });
        const policy = { backoffBaseMs: 1, backoffMaxMs: 1 };
        assert.ok((await store.dispatch.requeue({ ...guard, reason: 'agent killed by SIGKILL', policy })).ok);
        await store.sessions.end(agent.id);
        await store.sessions.end(runner.id, 'died');
        const human = await givenSession(store, 'box-2');
        await store.claims.acquire({ key: 'k', session: human.id });
        await store.claims.release({ key: 'k', session: human.id, epoch: 2, outcome: 'released' });
        await store.sessions.end(human.id, 'stopped');
        // Ended before migration 0027 recorded a reason: no reason, still `ended`.
        const old = await givenSession(store, 'box-3');
        await store.sessions.end(old.id);
        await raw.exec(`UPDATE sessions SET end_reason = NULL WHERE id = ${param(1)}`, [old.id]);
        const live = await givenSession(store, 'box-4');
        assert.deepEqual(
          [(await store.sessions.get(runner.id))?.endReason, (await store.sessions.get(live.id))?.endReason],
          ['died', null],
        );
        const by = new Map((await store.reports.sessions()).map((report) => [report.session, report]));
        const ends = [runner, agent, human, old, live].map((session) => {
          const report = by.get(session.id);
          return [report?.end, report?.endReason, report?.pid, report?.agentPid];
        });
        assert.deepEqual(ends, [
          ['ended', 'died', runner.pid, null],
          ['ended', 'stopped', runner.pid, 9191],
          ['ended', 'stopped', human.pid, null],
          ['ended', null, old.pid, null],
          ['live', null, live.pid, null],
        ]);
        assert.deepEqual(by.get(agent.id)?.issuesWorked, [
          {
            ...by.get(agent.id)?.issuesWorked[0],
            key: 'k',
            epoch: 1,
            outcome: 'failed',
            run: { job: guard.id, outcome: 'requeued', reason: 'agent killed by SIGKILL' },
          },
        ]);
        assert.deepEqual(
          by.get(human.id)?.issuesWorked.map((worked) => [worked.key, worked.outcome, worked.run]),
          [['k', 'released', null]],
        );
        const ended = await store.audit.list({ type: 'session:ended' });
        assert.deepEqual(
          ended.map((entry) => [entry.session, entry.detail['how']]),
          [
            [agent.id, 'stopped'],
            [runner.id, 'died'],
            [human.id, 'stopped'],
            [old.id, 'stopped'],
          ],
        );
      }));
  });
}
