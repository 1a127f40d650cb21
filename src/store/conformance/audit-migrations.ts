import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseAuditAndMigrations(h: Harness): void {
  describe('audit ledger', () => {
    test('appends one entry per state change with session, host, epoch and database time', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store, 'box-7');
        await givenTask(store, 't');
        const before = await store.now();
        await store.claims.acquire({ key: 't', session: s.id });
        await store.claims.release({ key: 't', session: s.id, epoch: 1, outcome: 'done' });
        const entries = await store.audit.list({ key: 't' });
        assert.deepEqual(entries.map((e) => e.type), ['task:added', 'claim:granted', 'claim:released']);
        const granted = entries[1];
        assert.equal(granted?.session, s.id);
        assert.equal(granted?.host, 'box-7');
        assert.equal(granted?.epoch, 1);
        assert.ok(granted !== undefined && granted.at >= before);
        assert.deepEqual(entries[2]?.detail, { outcome: 'done' });
      }));

    test('records the whole job lifecycle in order', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const claimed = await store.jobs.claimNext({ session: s.id });
        assert.ok(claimed !== null);
        await store.jobs.start({ id: job.id, session: s.id, epoch: claimed.epoch });
        await store.jobs.finish({ id: job.id, session: s.id, epoch: claimed.epoch, status: 'failed', exitCode: 2 });
        const types = (await store.audit.list({ jobId: job.id })).map((e) => e.type);
        assert.deepEqual(types, ['job:enqueued', 'job:claimed', 'job:started', 'job:finished']);
      }));

    test('filters the ledger by session and pages by id', () =>
      withFixture(h, async ({ store }) => {
        const a = await givenSession(store);
        const b = await givenSession(store);
        const mine = await store.audit.list({ session: a.id });
        assert.deepEqual(mine.map((e) => e.type), ['session:started']);
        const all = await store.audit.list();
        const firstId = all[0]?.id ?? 0;
        assert.deepEqual((await store.audit.list({ afterId: firstId })).map((e) => e.session), [b.id]);
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

    test('reads the database clock', () =>
      withFixture(h, async ({ store }) => {
        const a = await store.now();
        const b = await store.now();
        assert.ok(Number.isFinite(a) && b >= a);
      }));
  });
}
