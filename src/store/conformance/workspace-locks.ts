import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError, NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

async function givenWorkspace(store: Store, name = 'w'): Promise<string> {
  await store.workspaces.add({ name, path: `/srv/${name}`, kind: 'dir' });
  return name;
}

async function givenJob(store: Store, key: string): Promise<number> {
  return (await store.jobs.enqueue({ key })).job.id;
}

export function exerciseWorkspaceLocks(h: Harness): void {
  describe('workspace locks', () => {
    test('grants a free workspace with lock epoch 1 to a session for its job', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const s = await givenSession(store);
        const job = await givenJob(store, 't');
        const before = await store.now();
        const r = await store.workspaceLocks.acquire({ workspace: w, session: s.id, jobId: job });
        assert.ok(r.ok);
        assert.equal(r.granted, true);
        const { acquiredAt, ...rest } = r.lock;
        assert.deepEqual(rest, { workspace: w, session: s.id, jobId: job, epoch: 1 });
        assert.ok(acquiredAt >= before && acquiredAt <= (await store.now()));
        assert.deepEqual(await store.workspaceLocks.current(w), r.lock);
      }));

    test('returns the same lock and epoch when the holder acquires again for the same job', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const s = await givenSession(store);
        const job = await givenJob(store, 't');
        const first = await store.workspaceLocks.acquire({ workspace: w, session: s.id, jobId: job });
        const again = await store.workspaceLocks.acquire({ workspace: w, session: s.id, jobId: job });
        assert.ok(first.ok && again.ok);
        assert.equal(again.granted, false);
        assert.deepEqual(again.lock, first.lock);
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 1);
      }));

    test('tells a loser which session and job hold the workspace, on which host, since when', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const a = await givenSession(store, 'host-a');
        const b = await givenSession(store, 'host-b');
        const jobA = await givenJob(store, 'ta');
        const jobB = await givenJob(store, 'tb');
        const won = await store.workspaceLocks.acquire({ workspace: w, session: a.id, jobId: jobA });
        assert.ok(won.ok);
        const since = won.lock.acquiredAt;
        const entries = (await store.audit.list()).length;
        for (const loser of [
          { session: b.id, jobId: jobB },
          { session: a.id, jobId: jobB },
        ]) {
          const lost = await store.workspaceLocks.acquire({ workspace: w, ...loser });
          assert.ok(!lost.ok);
          assert.equal(lost.reason, 'held');
          assert.deepEqual(lost.holder, { session: a.id, host: 'host-a', jobId: jobA, since, epoch: 1 });
        }
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('grows the lock epoch with every grant and keeps the history in the ledger', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const a = await givenSession(store);
        const b = await givenSession(store);
        const epochs: number[] = [];
        for (const s of [a, b, a, b]) {
          const r = await store.workspaceLocks.acquire({ workspace: w, session: s.id });
          assert.ok(r.ok);
          epochs.push(r.lock.epoch);
          assert.deepEqual(
            await store.workspaceLocks.release({ workspace: w, session: s.id, epoch: r.lock.epoch }),
            {
              ok: true,
            },
          );
        }
        assert.deepEqual(epochs, [1, 2, 3, 4]);
        assert.equal(await store.workspaceLocks.current(w), null);
        const ledger = (await store.audit.list()).filter((e) => e.type.startsWith('lock:'));
        assert.deepEqual(
          ledger.map((e) => [e.type, e.epoch, e.session, e.detail['workspace']]),
          [
            ['lock:acquired', 1, a.id, w],
            ['lock:released', 1, a.id, w],
            ['lock:acquired', 2, b.id, w],
            ['lock:released', 2, b.id, w],
            ['lock:acquired', 3, a.id, w],
            ['lock:released', 3, a.id, w],
            ['lock:acquired', 4, b.id, w],
            ['lock:released', 4, b.id, w],
          ],
        );
      }));

    test('records the job and its task on the lock entries of the ledger', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const s = await givenSession(store);
        const job = await givenJob(store, 'github:acme/api#7');
        const r = await store.workspaceLocks.acquire({ workspace: w, session: s.id, jobId: job });
        assert.ok(r.ok);
        await store.workspaceLocks.release({ workspace: w, session: s.id, epoch: r.lock.epoch });
        const entries = await store.audit.list({ jobId: job });
        assert.deepEqual(
          entries.map((e) => [e.type, e.key, e.host]),
          [
            ['job:enqueued', 'github:acme/api#7', null],
            ['lock:acquired', 'github:acme/api#7', 'host-a'],
            ['lock:released', 'github:acme/api#7', 'host-a'],
          ],
        );
        assert.deepEqual(entries[2]?.detail, { workspace: w, outcome: 'released' });
      }));

    test('refuses a release carrying an older epoch and changes nothing', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const a = await givenSession(store, 'host-a');
        const b = await givenSession(store, 'host-b');
        await store.workspaceLocks.acquire({ workspace: w, session: a.id });
        await store.workspaceLocks.release({ workspace: w, session: a.id, epoch: 1 });
        const now = await store.workspaceLocks.acquire({ workspace: w, session: b.id });
        assert.ok(now.ok);
        const entries = (await store.audit.list()).length;
        const stale = await store.workspaceLocks.release({ workspace: w, session: a.id, epoch: 1 });
        assert.ok(!stale.ok);
        assert.equal(stale.reason, 'fenced');
        assert.equal(stale.current?.session, b.id);
        assert.equal(stale.current?.epoch, 2);
        assert.deepEqual(await store.workspaceLocks.current(w), now.lock);
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('refuses a release by another session presenting the current epoch', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const a = await givenSession(store);
        const b = await givenSession(store);
        await store.workspaceLocks.acquire({ workspace: w, session: a.id });
        const r = await store.workspaceLocks.release({ workspace: w, session: b.id, epoch: 1 });
        assert.equal(r.ok, false);
        assert.equal((await store.workspaceLocks.current(w))?.session, a.id);
        const free = await store.workspaceLocks.release({ workspace: w, session: a.id, epoch: 1 });
        assert.ok(free.ok);
        assert.deepEqual(await store.workspaceLocks.release({ workspace: w, session: a.id, epoch: 1 }), {
          ok: false,
          reason: 'fenced',
          current: null,
        });
      }));

    test('gives a workspace to exactly one of many concurrent acquirers on two stores', () =>
      withFixture(h, async ({ store, openAnother }) => {
        const other = await openAnother();
        const w = await givenWorkspace(store);
        const sessions = await Promise.all(Array.from({ length: 8 }, () => givenSession(store)));
        const results = await Promise.all(
          sessions.map((s, i) =>
            (i % 2 === 0 ? store : other).workspaceLocks.acquire({ workspace: w, session: s.id }),
          ),
        ).finally(() => other.close());
        const winners = results.filter((r) => r.ok);
        assert.equal(winners.length, 1);
        const winner = winners[0];
        assert.ok(winner?.ok);
        assert.equal(winner.lock.epoch, 1);
        for (const r of results.filter((x) => !x.ok)) {
          assert.ok(!r.ok);
          assert.equal(r.holder.session, winner.lock.session);
        }
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 1);
      }));

    test('locks different workspaces independently, each with its own epoch', () =>
      withFixture(h, async ({ store }) => {
        const a = await givenSession(store);
        const b = await givenSession(store);
        await givenWorkspace(store, 'w1');
        await givenWorkspace(store, 'w2');
        const one = await store.workspaceLocks.acquire({ workspace: 'w1', session: a.id });
        const two = await store.workspaceLocks.acquire({ workspace: 'w2', session: b.id });
        assert.ok(one.ok && two.ok);
        assert.deepEqual([one.lock.epoch, two.lock.epoch], [1, 1]);
      }));

    test('allows at most one live lock per workspace, whatever path wrote it', () =>
      withFixture(h, async ({ store, raw }) => {
        const w = await givenWorkspace(store);
        const a = await givenSession(store);
        await store.workspaceLocks.acquire({ workspace: w, session: a.id });
        await assert.rejects(
          raw.exec(
            `INSERT INTO workspace_locks (workspace, job_id, session_id, epoch, acquired_at)
             SELECT workspace, NULL, session_id, epoch + 1, acquired_at FROM workspace_locks`,
          ),
          /UNIQUE|duplicate key/i,
        );
        assert.equal((await store.workspaceLocks.current(w))?.epoch, 1);
      }));

    test('releases every lock of a session for recovery, audited with the outcome', () =>
      withFixture(h, async ({ store }) => {
        const a = await givenSession(store);
        const b = await givenSession(store);
        for (const w of ['w2', 'w1', 'w3']) await givenWorkspace(store, w);
        await store.workspaceLocks.acquire({ workspace: 'w2', session: a.id });
        await store.workspaceLocks.acquire({ workspace: 'w1', session: a.id });
        await store.workspaceLocks.acquire({ workspace: 'w3', session: b.id });
        const released = await store.workspaceLocks.releaseBySession({ session: a.id });
        assert.deepEqual(
          released.map((l) => [l.workspace, l.epoch]),
          [
            ['w1', 1],
            ['w2', 1],
          ],
        );
        assert.equal(await store.workspaceLocks.current('w1'), null);
        assert.equal((await store.workspaceLocks.current('w3'))?.session, b.id);
        const entries = await store.audit.list({ type: 'lock:released' });
        assert.deepEqual(
          entries.map((e) => e.detail),
          [
            { workspace: 'w1', outcome: 'recovered' },
            { workspace: 'w2', outcome: 'recovered' },
          ],
        );
        assert.deepEqual(
          await store.workspaceLocks.releaseBySession({ session: a.id, outcome: 'abandoned' }),
          [],
        );
        const next = await store.workspaceLocks.acquire({ workspace: 'w1', session: b.id });
        assert.ok(next.ok);
        assert.equal(next.lock.epoch, 2);
      }));

    test('refuses a lock on an unknown workspace, by an unknown or ended session, or for an unknown job', () =>
      withFixture(h, async ({ store }) => {
        const w = await givenWorkspace(store);
        const s = await givenSession(store);
        const ended = await givenSession(store);
        await store.sessions.end(ended.id);
        await assert.rejects(
          store.workspaceLocks.acquire({ workspace: 'nope', session: s.id }),
          NotFoundError,
        );
        await assert.rejects(store.workspaceLocks.acquire({ workspace: w, session: 424242 }), NotFoundError);
        await assert.rejects(store.workspaceLocks.acquire({ workspace: w, session: ended.id }), FencedError);
        const unknownJob = { workspace: w, session: s.id, jobId: 424242 };
        await assert.rejects(store.workspaceLocks.acquire(unknownJob), NotFoundError);
        await assert.rejects(store.workspaceLocks.current('nope'), NotFoundError);
        const unknownWorkspace = { workspace: 'nope', session: s.id, epoch: 1 };
        await assert.rejects(store.workspaceLocks.release(unknownWorkspace), NotFoundError);
        await assert.rejects(store.workspaceLocks.releaseBySession({ session: 424242 }), NotFoundError);
        assert.equal(await store.workspaceLocks.current(w), null);
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 0);
      }));
  });
}
