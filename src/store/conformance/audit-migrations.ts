import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError } from '../../core/errors.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseAuditAndMigrations(harness: Harness): void {
  describe('audit ledger', () => {
    test("filters by key, session, job and type, alone and together; a job's rows carry its task key", () =>
      withFixture(harness, async ({ store, raw }) => {
        const session = await givenSession(store, 'box-1');
        const other = await givenSession(store, 'box-2');
        const { job: jobA } = await store.jobs.enqueue({ key: 'a', priority: 1 });
        const { job: jobB } = await store.jobs.enqueue({ key: 'b', priority: 2 });
        const first = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(first !== null && first.id === jobA.id);
        const policy = { backoffBaseMs: 0, backoffMaxMs: 0 };
        await store.dispatch.requeue({
          id: jobA.id,
          session: session.id,
          epoch: first.epoch,
          reason: 'crash',
          policy,
        });
        const again = await store.jobs.claimNext({ session: other.id, start: true });
        assert.ok(again !== null && again.id === jobA.id);
        const loop = {
          id: jobA.id,
          session: other.id,
          epoch: again.epoch,
          status: 'done' as const,
          start: true,
        };
        const { next } = await store.jobs.finishAndClaimNext(loop);
        assert.equal(next?.id, jobB.id);
        await store.jobs.cancel({ id: jobB.id, by: session.id });
        const all = await store.audit.list();
        const types = (entries: readonly { type: string }[]) => entries.map((entry) => entry.type);
        const byJob = await store.audit.list({ jobId: jobA.id });
        assert.deepEqual(
          byJob,
          all.filter((entry) => entry.jobId === jobA.id),
        );
        assert.deepEqual(types(byJob), [
          ...['job:enqueued', 'job:claimed', 'job:requeued'],
          ...['job:claimed', 'job:finished'],
        ]);
        assert.deepEqual(
          await store.audit.list({ key: 'b' }),
          all.filter((entry) => entry.key === 'b'),
        );
        assert.deepEqual(
          await store.audit.list({ session: other.id }),
          all.filter((entry) => entry.session === other.id),
        );
        const mix = await store.audit.list({ jobId: jobA.id, session: other.id, type: 'job:claimed' });
        const expected = all.filter(
          (entry) => entry.jobId === jobA.id && entry.session === other.id && entry.type === 'job:claimed',
        );
        assert.deepEqual(mix, expected);
        assert.equal(mix.length, 1);
        const after = await store.audit.list({ key: 'a', afterId: byJob[2]?.id ?? 0, limit: 2 });
        assert.deepEqual(after, byJob.slice(3, 5));
        assert.deepEqual(await store.audit.list({ jobId: 999_999 }), []);
        // The invariant the job filter relies on, over the whole ledger.
        const keys = new Map((await store.jobs.list()).map((job) => [job.id, job.key]));
        const wrong = (
          await raw.exec('SELECT id, task_key, job_id FROM audit_events WHERE job_id IS NOT NULL')
        ).filter((row) => row.task_key !== keys.get(Number(row.job_id)));
        assert.deepEqual(wrong, []);
      }));

    test('settled is the highest committed id when no one writes; a follower reads up to it and no further', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        await givenTask(store, 'f1');
        const other = await openAnother();
        try {
          await givenTask(other, 'f2');
          const all = await store.audit.list();
          const top = all.at(-1)?.id ?? 0;
          // Written by another store (another process, to the database): settled all the same.
          assert.equal(await store.audit.settled(), top);
          assert.equal(await other.audit.settled(), top);
          await givenTask(other, 'f3');
          const bounded = await store.audit.list({ afterId: 0, throughId: top });
          assert.deepEqual(bounded, all, 'throughId leaves out the row written after it');
          const newest = (await store.audit.list()).at(-1)?.id ?? 0;
          assert.ok(newest > top);
          // A follower's answer may be up to 250 ms old on PostgreSQL (its looks are shared): asked for 2 s.
          let settled = await store.audit.settled();
          for (let look = 0; look < 40 && settled < newest; look++) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            settled = await store.audit.settled();
          }
          assert.equal(settled, newest, 'settled moves on with each commit');
          assert.deepEqual(
            (await store.audit.list({ afterId: top, throughId: newest })).map((entry) => entry.key),
            ['f3'],
          );
        } finally {
          await other.close();
        }
      }));

    test('appends one entry per state change with session, host, epoch and database time', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-7');
        await givenTask(store, 't');
        const before = await store.now();
        await store.claims.acquire({ key: 't', session: session.id });
        await store.claims.release({ key: 't', session: session.id, epoch: 1, outcome: 'done' });
        const entries = await store.audit.list({ key: 't' });
        assert.deepEqual(
          entries.map((entry) => entry.type),
          ['task:added', 'claim:granted', 'claim:released', 'task:state'],
        );
        const granted = entries[1];
        assert.equal(granted?.session, session.id);
        assert.equal(granted?.host, 'box-7');
        assert.equal(granted?.epoch, 1);
        assert.ok(granted !== undefined && granted.at >= before);
        assert.deepEqual(entries[2]?.detail, { outcome: 'done' });
        assert.deepEqual(entries[3]?.detail, {
          from: 'open',
          to: 'done',
          action: 'finish',
          by: `session ${session.id}`,
          reason: null,
        });
        assert.equal(entries[3]?.session, session.id);
        assert.equal(entries[3]?.host, 'box-7');
      }));

    test('records the whole job lifecycle in order', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const claimed = await store.jobs.claimNext({ session: session.id });
        assert.ok(claimed !== null);
        await store.jobs.start({ id: job.id, session: session.id, epoch: claimed.epoch });
        await store.jobs.finish({
          id: job.id,
          session: session.id,
          epoch: claimed.epoch,
          status: 'failed',
          exitCode: 2,
        });
        const rows = await store.audit.list({ jobId: job.id });
        assert.deepEqual(
          rows.map((entry) => entry.type),
          ['job:enqueued', 'job:claimed', 'job:started', 'job:finished'],
        );
        // A claim that did not start its job says nothing of a start: its start has its own row.
        assert.deepEqual(rows[1]?.detail, { attempt: 1, host: session.host });
      }));

    test('filters the ledger by session and pages by id', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        const mine = await store.audit.list({ session: first.id });
        assert.deepEqual(
          mine.map((entry) => entry.type),
          ['session:started'],
        );
        const all = await store.audit.list();
        const firstId = all[0]?.id ?? 0;
        assert.deepEqual(
          (await store.audit.list({ afterId: firstId })).map((entry) => entry.session),
          [second.id],
        );
        assert.equal((await store.audit.list({ limit: 1 })).length, 1);
      }));

    test('refuses to update or delete ledger entries', () =>
      withFixture(harness, async ({ store, raw }) => {
        await givenSession(store);
        await assert.rejects(raw.exec(`UPDATE audit_events SET type = 'x'`), /append-only/);
        await assert.rejects(raw.exec('DELETE FROM audit_events'), /append-only/);
        assert.equal((await store.audit.list()).length, 1);
      }));
  });

  describe('migrations', () => {
    test('applies each migration once when several stores open one database at once', () =>
      withFixture(harness, async ({ openAnother, raw }) => {
        const stores = await Promise.all(Array.from({ length: 6 }, () => openAnother()));
        await Promise.all(stores.map((store) => store.close()));
        const rows = await raw.exec('SELECT version FROM schema_migrations ORDER BY version');
        const versions = rows.map((row) => Number(row.version));
        assert.equal(new Set(versions).size, versions.length);
        assert.ok(versions.length >= 1);
      }));

    test('refuses to open a database whose schema is newer than it knows, saying to upgrade', () =>
      withFixture(harness, async ({ raw, openAnother }) => {
        await raw.exec(
          `INSERT INTO schema_migrations (version, name, applied_at)
           SELECT 9999, 'from the future', applied_at FROM schema_migrations WHERE version = 1`,
        );
        await assert.rejects(
          openAnother(),
          (error: unknown) =>
            error instanceof ConflictError &&
            /schema is at version 9999, newer than this baton knows/.test(error.message) &&
            /upgrade baton/.test(error.hint ?? ''),
        );
      }));

    test('reads the database clock', () =>
      withFixture(harness, async ({ store }) => {
        const earlier = await store.now();
        const later = await store.now();
        assert.ok(Number.isFinite(earlier) && later >= earlier);
      }));
  });
}
