import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError } from '../../core/errors.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseAuditAndMigrations(h: Harness): void {
  describe('audit ledger', () => {
    test("filters by key, session, job and type, alone and together; a job's rows carry its task key", () =>
      withFixture(h, async ({ store, raw }) => {
        const s = await givenSession(store, 'box-1');
        const other = await givenSession(store, 'box-2');
        const { job: a } = await store.jobs.enqueue({ key: 'a', priority: 1 });
        const { job: b } = await store.jobs.enqueue({ key: 'b', priority: 2 });
        const first = await store.jobs.claimNext({ session: s.id, start: true });
        assert.ok(first !== null && first.id === a.id);
        const policy = { backoffBaseMs: 0, backoffMaxMs: 0 };
        await store.dispatch.requeue({
          id: a.id,
          session: s.id,
          epoch: first.epoch,
          reason: 'crash',
          policy,
        });
        const again = await store.jobs.claimNext({ session: other.id, start: true });
        assert.ok(again !== null && again.id === a.id);
        const loop = {
          id: a.id,
          session: other.id,
          epoch: again.epoch,
          status: 'done' as const,
          start: true,
        };
        const { next } = await store.jobs.finishAndClaimNext(loop);
        assert.equal(next?.id, b.id);
        await store.jobs.cancel({ id: b.id, by: s.id });
        const all = await store.audit.list();
        const types = (e: readonly { type: string }[]) => e.map((x) => x.type);
        const byJob = await store.audit.list({ jobId: a.id });
        assert.deepEqual(
          byJob,
          all.filter((e) => e.jobId === a.id),
        );
        assert.deepEqual(types(byJob), [
          ...['job:enqueued', 'job:claimed', 'job:started', 'job:requeued'],
          ...['job:claimed', 'job:started', 'job:finished'],
        ]);
        assert.deepEqual(
          await store.audit.list({ key: 'b' }),
          all.filter((e) => e.key === 'b'),
        );
        assert.deepEqual(
          await store.audit.list({ session: other.id }),
          all.filter((e) => e.session === other.id),
        );
        const mix = await store.audit.list({ jobId: a.id, session: other.id, type: 'job:claimed' });
        const expected = all.filter(
          (e) => e.jobId === a.id && e.session === other.id && e.type === 'job:claimed',
        );
        assert.deepEqual(mix, expected);
        assert.equal(mix.length, 1);
        const after = await store.audit.list({ key: 'a', afterId: byJob[2]?.id ?? 0, limit: 2 });
        assert.deepEqual(after, byJob.slice(3, 5));
        assert.deepEqual(await store.audit.list({ jobId: 999_999 }), []);
        // The invariant the job filter relies on, over the whole ledger.
        const keys = new Map((await store.jobs.list()).map((j) => [j.id, j.key]));
        const wrong = (
          await raw.exec('SELECT id, task_key, job_id FROM audit_events WHERE job_id IS NOT NULL')
        ).filter((r) => r.task_key !== keys.get(Number(r.job_id)));
        assert.deepEqual(wrong, []);
      }));

    test('appends one entry per state change with session, host, epoch and database time', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store, 'box-7');
        await givenTask(store, 't');
        const before = await store.now();
        await store.claims.acquire({ key: 't', session: s.id });
        await store.claims.release({ key: 't', session: s.id, epoch: 1, outcome: 'done' });
        const entries = await store.audit.list({ key: 't' });
        assert.deepEqual(
          entries.map((e) => e.type),
          ['task:added', 'claim:granted', 'claim:released', 'task:state'],
        );
        const granted = entries[1];
        assert.equal(granted?.session, s.id);
        assert.equal(granted?.host, 'box-7');
        assert.equal(granted?.epoch, 1);
        assert.ok(granted !== undefined && granted.at >= before);
        assert.deepEqual(entries[2]?.detail, { outcome: 'done' });
        assert.deepEqual(entries[3]?.detail, {
          from: 'open',
          to: 'done',
          action: 'finish',
          by: `session ${s.id}`,
          reason: null,
        });
        assert.equal(entries[3]?.session, s.id);
        assert.equal(entries[3]?.host, 'box-7');
      }));

    test('records the whole job lifecycle in order', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const claimed = await store.jobs.claimNext({ session: s.id });
        assert.ok(claimed !== null);
        await store.jobs.start({ id: job.id, session: s.id, epoch: claimed.epoch });
        await store.jobs.finish({
          id: job.id,
          session: s.id,
          epoch: claimed.epoch,
          status: 'failed',
          exitCode: 2,
        });
        const types = (await store.audit.list({ jobId: job.id })).map((e) => e.type);
        assert.deepEqual(types, ['job:enqueued', 'job:claimed', 'job:started', 'job:finished']);
      }));

    test('filters the ledger by session and pages by id', () =>
      withFixture(h, async ({ store }) => {
        const a = await givenSession(store);
        const b = await givenSession(store);
        const mine = await store.audit.list({ session: a.id });
        assert.deepEqual(
          mine.map((e) => e.type),
          ['session:started'],
        );
        const all = await store.audit.list();
        const firstId = all[0]?.id ?? 0;
        assert.deepEqual(
          (await store.audit.list({ afterId: firstId })).map((e) => e.session),
          [b.id],
        );
        assert.equal((await store.audit.list({ limit: 1 })).length, 1);
      }));

    test('refuses to update or delete ledger entries', () =>
      withFixture(h, async ({ store, raw }) => {
        await givenSession(store);
        await assert.rejects(raw.exec(`UPDATE audit_events SET type = 'x'`), /append-only/);
        await assert.rejects(raw.exec('DELETE FROM audit_events'), /append-only/);
        assert.equal((await store.audit.list()).length, 1);
      }));
  });

  describe('migrations', () => {
    test('applies each migration once when several stores open one database at once', () =>
      withFixture(h, async ({ openAnother, raw }) => {
        const stores = await Promise.all(Array.from({ length: 6 }, () => openAnother()));
        await Promise.all(stores.map((s) => s.close()));
        const rows = await raw.exec('SELECT version FROM schema_migrations ORDER BY version');
        const versions = rows.map((r) => Number(r.version));
        assert.equal(new Set(versions).size, versions.length);
        assert.ok(versions.length >= 1);
      }));

    test('refuses to open a database whose schema is newer than it knows, saying to upgrade', () =>
      withFixture(h, async ({ raw, openAnother }) => {
        await raw.exec(
          `INSERT INTO schema_migrations (version, name, applied_at)
           SELECT 9999, 'from the future', applied_at FROM schema_migrations WHERE version = 1`,
        );
        await assert.rejects(
          openAnother(),
          (e: unknown) =>
            e instanceof ConflictError &&
            /schema is at version 9999, newer than this baton knows/.test(e.message) &&
            /upgrade baton/.test(e.hint ?? ''),
        );
      }));

    test('reads the database clock', () =>
      withFixture(h, async ({ store }) => {
        const a = await store.now();
        const b = await store.now();
        assert.ok(Number.isFinite(a) && b >= a);
      }));
  });
}
