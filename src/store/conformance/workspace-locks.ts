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

export function exerciseWorkspaceLocks(harness: Harness): void {
  describe('workspace locks', () => {
    test('grants a free workspace with lock epoch 1 to a session for its job', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const session = await givenSession(store);
        const job = await givenJob(store, 't');
        const before = await store.now();
        const result = await store.workspaceLocks.acquire({
          workspace: workspace,
          session: session.id,
          jobId: job,
        });
        assert.ok(result.ok);
        assert.equal(result.granted, true);
        const { acquiredAt, ...rest } = result.lock;
        assert.deepEqual(rest, { workspace: workspace, session: session.id, jobId: job, epoch: 1 });
        assert.ok(acquiredAt >= before && acquiredAt <= (await store.now()));
        assert.deepEqual(await store.workspaceLocks.current(workspace), result.lock);
      }));

    test('returns the same lock and epoch when the holder acquires again for the same job', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const session = await givenSession(store);
        const job = await givenJob(store, 't');
        const first = await store.workspaceLocks.acquire({
          workspace: workspace,
          session: session.id,
          jobId: job,
        });
        const again = await store.workspaceLocks.acquire({
          workspace: workspace,
          session: session.id,
          jobId: job,
        });
        assert.ok(first.ok && again.ok);
        assert.equal(again.granted, false);
        assert.deepEqual(again.lock, first.lock);
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 1);
      }));

    test('tells a loser which session and job hold the workspace, on which host, since when', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const first = await givenSession(store, 'host-a');
        const second = await givenSession(store, 'host-b');
        const jobA = await givenJob(store, 'ta');
        const jobB = await givenJob(store, 'tb');
        const won = await store.workspaceLocks.acquire({
          workspace: workspace,
          session: first.id,
          jobId: jobA,
        });
        assert.ok(won.ok);
        const since = won.lock.acquiredAt;
        const entries = (await store.audit.list()).length;
        for (const loser of [
          { session: second.id, jobId: jobB },
          { session: first.id, jobId: jobB },
        ]) {
          const lost = await store.workspaceLocks.acquire({ workspace: workspace, ...loser });
          assert.ok(!lost.ok);
          assert.equal(lost.reason, 'held');
          assert.deepEqual(lost.holder, { session: first.id, host: 'host-a', jobId: jobA, since, epoch: 1 });
        }
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('grows the lock epoch with every grant and keeps the history in the ledger', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const first = await givenSession(store);
        const second = await givenSession(store);
        const epochs: number[] = [];
        for (const session of [first, second, first, second]) {
          const result = await store.workspaceLocks.acquire({ workspace: workspace, session: session.id });
          assert.ok(result.ok);
          epochs.push(result.lock.epoch);
          assert.deepEqual(
            await store.workspaceLocks.release({
              workspace: workspace,
              session: session.id,
              epoch: result.lock.epoch,
            }),
            {
              ok: true,
            },
          );
        }
        assert.deepEqual(epochs, [1, 2, 3, 4]);
        assert.equal(await store.workspaceLocks.current(workspace), null);
        const ledger = (await store.audit.list()).filter((entry) => entry.type.startsWith('lock:'));
        assert.deepEqual(
          ledger.map((entry) => [entry.type, entry.epoch, entry.session, entry.detail['workspace']]),
          [
            ['lock:acquired', 1, first.id, workspace],
            ['lock:released', 1, first.id, workspace],
            ['lock:acquired', 2, second.id, workspace],
            ['lock:released', 2, second.id, workspace],
            ['lock:acquired', 3, first.id, workspace],
            ['lock:released', 3, first.id, workspace],
            ['lock:acquired', 4, second.id, workspace],
            ['lock:released', 4, second.id, workspace],
          ],
        );
      }));

    test('records the job and its task on the lock entries of the ledger', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const session = await givenSession(store);
        const job = await givenJob(store, 'github:acme/api#7');
        const result = await store.workspaceLocks.acquire({
          workspace: workspace,
          session: session.id,
          jobId: job,
        });
        assert.ok(result.ok);
        await store.workspaceLocks.release({
          workspace: workspace,
          session: session.id,
          epoch: result.lock.epoch,
        });
        const entries = await store.audit.list({ jobId: job });
        assert.deepEqual(
          entries.map((entry) => [entry.type, entry.key, entry.host]),
          [
            ['job:enqueued', 'github:acme/api#7', null],
            ['lock:acquired', 'github:acme/api#7', 'host-a'],
            ['lock:released', 'github:acme/api#7', 'host-a'],
          ],
        );
        assert.deepEqual(entries[2]?.detail, { workspace: workspace, outcome: 'released' });
      }));

    test('refuses a release carrying an older epoch and changes nothing', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const first = await givenSession(store, 'host-a');
        const second = await givenSession(store, 'host-b');
        await store.workspaceLocks.acquire({ workspace: workspace, session: first.id });
        await store.workspaceLocks.release({ workspace: workspace, session: first.id, epoch: 1 });
        const now = await store.workspaceLocks.acquire({ workspace: workspace, session: second.id });
        assert.ok(now.ok);
        const entries = (await store.audit.list()).length;
        const stale = await store.workspaceLocks.release({
          workspace: workspace,
          session: first.id,
          epoch: 1,
        });
        assert.ok(!stale.ok);
        assert.equal(stale.reason, 'fenced');
        assert.equal(stale.current?.session, second.id);
        assert.equal(stale.current?.epoch, 2);
        assert.deepEqual(await store.workspaceLocks.current(workspace), now.lock);
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('refuses a release by another session presenting the current epoch', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const first = await givenSession(store);
        const second = await givenSession(store);
        await store.workspaceLocks.acquire({ workspace: workspace, session: first.id });
        const result = await store.workspaceLocks.release({
          workspace: workspace,
          session: second.id,
          epoch: 1,
        });
        assert.equal(result.ok, false);
        assert.equal((await store.workspaceLocks.current(workspace))?.session, first.id);
        const free = await store.workspaceLocks.release({
          workspace: workspace,
          session: first.id,
          epoch: 1,
        });
        assert.ok(free.ok);
        assert.deepEqual(
          await store.workspaceLocks.release({ workspace: workspace, session: first.id, epoch: 1 }),
          {
            ok: false,
            reason: 'fenced',
            current: null,
          },
        );
      }));

    test('gives a workspace to exactly one of many concurrent acquirers on two stores', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        const workspace = await givenWorkspace(store);
        const sessions = await Promise.all(Array.from({ length: 8 }, () => givenSession(store)));
        const results = await Promise.all(
          sessions.map((session, index) =>
            (index % 2 === 0 ? store : other).workspaceLocks.acquire({
              workspace: workspace,
              session: session.id,
            }),
          ),
        ).finally(() => other.close());
        const winners = results.filter((result) => result.ok);
        assert.equal(winners.length, 1);
        const winner = winners[0];
        assert.ok(winner?.ok);
        assert.equal(winner.lock.epoch, 1);
        for (const refusal of results.filter((result) => !result.ok)) {
          assert.ok(!refusal.ok);
          assert.equal(refusal.holder.session, winner.lock.session);
        }
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 1);
      }));

    test('locks different workspaces independently, each with its own epoch', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        await givenWorkspace(store, 'w1');
        await givenWorkspace(store, 'w2');
        const one = await store.workspaceLocks.acquire({ workspace: 'w1', session: first.id });
        const two = await store.workspaceLocks.acquire({ workspace: 'w2', session: second.id });
        assert.ok(one.ok && two.ok);
        assert.deepEqual([one.lock.epoch, two.lock.epoch], [1, 1]);
      }));

    test('allows at most one live lock per workspace, whatever path wrote it', () =>
      withFixture(harness, async ({ store, raw }) => {
        const workspace = await givenWorkspace(store);
        const first = await givenSession(store);
        await store.workspaceLocks.acquire({ workspace: workspace, session: first.id });
        await assert.rejects(
          raw.exec(
            `INSERT INTO workspace_locks (workspace, job_id, session_id, epoch, acquired_at)
             SELECT workspace, NULL, session_id, epoch + 1, acquired_at FROM workspace_locks`,
          ),
          /UNIQUE|duplicate key/i,
        );
        assert.equal((await store.workspaceLocks.current(workspace))?.epoch, 1);
      }));

    test('releases every lock of a session for recovery, audited with the outcome', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        for (const name of ['w2', 'w1', 'w3']) await givenWorkspace(store, name);
        await store.workspaceLocks.acquire({ workspace: 'w2', session: first.id });
        await store.workspaceLocks.acquire({ workspace: 'w1', session: first.id });
        await store.workspaceLocks.acquire({ workspace: 'w3', session: second.id });
        const released = await store.workspaceLocks.releaseBySession({ session: first.id });
        assert.deepEqual(
          released.map((lock) => [lock.workspace, lock.epoch]),
          [
            ['w1', 1],
            ['w2', 1],
          ],
        );
        assert.equal(await store.workspaceLocks.current('w1'), null);
        assert.equal((await store.workspaceLocks.current('w3'))?.session, second.id);
        const entries = await store.audit.list({ type: 'lock:released' });
        assert.deepEqual(
          entries.map((entry) => entry.detail),
          [
            { workspace: 'w1', outcome: 'recovered' },
            { workspace: 'w2', outcome: 'recovered' },
          ],
        );
        assert.deepEqual(
          await store.workspaceLocks.releaseBySession({ session: first.id, outcome: 'abandoned' }),
          [],
        );
        const next = await store.workspaceLocks.acquire({ workspace: 'w1', session: second.id });
        assert.ok(next.ok);
        assert.equal(next.lock.epoch, 2);
      }));

    test('refuses a lock on an unknown workspace, by an unknown or ended session, or for an unknown job', () =>
      withFixture(harness, async ({ store }) => {
        const workspace = await givenWorkspace(store);
        const session = await givenSession(store);
        const ended = await givenSession(store);
        await store.sessions.end(ended.id);
        await assert.rejects(
          store.workspaceLocks.acquire({ workspace: 'nope', session: session.id }),
          NotFoundError,
        );
        await assert.rejects(
          store.workspaceLocks.acquire({ workspace: workspace, session: 424242 }),
          NotFoundError,
        );
        await assert.rejects(
          store.workspaceLocks.acquire({ workspace: workspace, session: ended.id }),
          FencedError,
        );
        const unknownJob = { workspace: workspace, session: session.id, jobId: 424242 };
        await assert.rejects(store.workspaceLocks.acquire(unknownJob), NotFoundError);
        await assert.rejects(store.workspaceLocks.current('nope'), NotFoundError);
        const unknownWorkspace = { workspace: 'nope', session: session.id, epoch: 1 };
        await assert.rejects(store.workspaceLocks.release(unknownWorkspace), NotFoundError);
        await assert.rejects(store.workspaceLocks.releaseBySession({ session: 424242 }), NotFoundError);
        assert.equal(await store.workspaceLocks.current(workspace), null);
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 0);
      }));
  });
}
