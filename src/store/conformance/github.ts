import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, withFixture, type Harness } from './harness.js';

const K = 'github:acme/api#7';

export function exerciseGithub(h: Harness): void {
  describe('the GitHub outbox', () => {
    test('writes a labels row with every job, claim and state change of a github: task, and none for others', () =>
      withFixture(h, async ({ store }) => {
        await store.tasks.add({ key: K });
        await store.tasks.add({ key: 'local-1' });
        const { job } = await store.jobs.enqueue({ key: K });
        await store.jobs.enqueue({ key: 'local-1' });
        const s = await givenSession(store);
        await store.jobs.cancel({ id: job.id });
        const claim = await store.claims.acquire({ key: K, session: s.id });
        assert.ok(claim.ok);
        await store.lifecycle.escalate({
          key: K,
          reason: 'which schema?',
          by: { name: 'agent', session: s.id },
          claim: { session: s.id, epoch: claim.claim.epoch },
        });
        const rows = await store.github.pending({ limit: 100 });
        assert.ok(rows.every((r) => r.key === K));
        const causes = rows.map((r) => `${r.kind} ${r.cause}`);
        for (const want of [
          'labels task:open',
          'labels job:queued',
          'labels job:cancelled',
          'labels claim:granted',
        ]) {
          assert.ok(causes.includes(want), `${want} in ${causes.join(', ')}`);
        }
        const comment = rows.find((r) => r.kind === 'comment');
        assert.equal(comment?.cause, 'task:escalated');
        assert.equal(comment?.body, 'which schema?');
        assert.deepEqual(
          rows.map((r) => r.id),
          [...rows.map((r) => r.id)].sort((a, b) => a - b),
        );
        const [facts] = await store.github.labelStates([K]);
        assert.deepEqual(facts, { key: K, state: 'escalated', held: false, jobStatus: null });
      }));

    test('holds an issue back after a failure so its rows stay in order, and marks rows applied once', () =>
      withFixture(h, async ({ store }) => {
        await store.tasks.add({ key: K });
        await store.tasks.add({ key: 'github:acme/api#8' });
        const first = await store.github.pending({ limit: 100 });
        const mine = first.filter((r) => r.key === K).map((r) => r.id);
        await store.github.failed({ ids: mine, error: 'GitHub 500', retryAfterMs: 60_000 });
        await store.jobs.enqueue({ key: K });
        const next = await store.github.pending({ limit: 100 });
        assert.ok(
          next.every((r) => r.key !== K),
          'a later row waits behind the failed one',
        );
        const waiting = await store.github.pending({ limit: 100, key: K });
        assert.equal(waiting.length, 2);
        assert.equal(waiting[0]?.attempts, 1);
        assert.equal(waiting[0]?.lastError, 'GitHub 500');
        await store.github.applied(waiting.map((r) => r.id));
        await store.github.applied(waiting.map((r) => r.id));
        assert.equal(await store.github.backlog(), 1);
        assert.equal((await store.github.pending({ limit: 100, prefix: 'github:other/' })).length, 0);
      }));

    test('keeps cursors and cached answers, and audits repairs and re-checks', () =>
      withFixture(h, async ({ store }) => {
        await store.tasks.add({ key: K });
        assert.equal(await store.github.cursor('acme/api'), null);
        await store.github.saveCursor({ repo: 'acme/api', since: '2026-01-01T00:00:00Z' });
        await store.github.saveCursor({ repo: 'acme/api', since: '2026-01-02T00:00:00Z' });
        assert.equal(await store.github.cursor('acme/api'), '2026-01-02T00:00:00Z');
        await store.github.cache({ url: '/x', etag: '"a"', body: '[]' });
        await store.github.cache({ url: '/x', etag: '"b"', body: '[1]' });
        assert.deepEqual(await store.github.cached('/x'), { etag: '"b"', body: '[1]' });
        const before = await store.github.backlog();
        await store.github.repair({ key: K, detail: { found: ['WIP'], expected: [] } });
        assert.equal(await store.github.backlog(), before + 1);
        await store.github.note({ type: 'github:recheck', key: K, detail: { checked: false } });
        const types = (await store.audit.list({ key: K })).map((e) => e.type);
        assert.ok(types.includes('github:label-repaired') && types.includes('github:recheck'));
      }));
  });
}
