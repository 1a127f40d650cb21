import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, withFixture, type Fixture, type Harness } from './harness.js';

const TASK_KEY = 'github:acme/api#7';
const DAY = 86_400_000;

async function outboxIds(fixture: Fixture): Promise<number[]> {
  const rows = await fixture.raw.exec('SELECT id FROM github_outbox ORDER BY id');
  return rows.map((row) => Number(row['id']));
}

export function exerciseGithub(harness: Harness): void {
  describe('the GitHub outbox', () => {
    test('writes a labels row with every job, claim and state change of a github: task, and none for others', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: TASK_KEY });
        await store.tasks.add({ key: 'local-1' });
        const { job } = await store.jobs.enqueue({ key: TASK_KEY });
        await store.jobs.enqueue({ key: 'local-1' });
        const session = await givenSession(store);
        await store.jobs.cancel({ id: job.id });
        const claim = await store.claims.acquire({ key: TASK_KEY, session: session.id });
        assert.ok(claim.ok);
        await store.lifecycle.escalate({
          key: TASK_KEY,
          reason: 'which schema?',
          by: { name: 'agent', session: session.id },
          claim: { session: session.id, epoch: claim.claim.epoch },
        });
        const rows = await store.github.pending({ limit: 100 });
        assert.ok(rows.every((row) => row.key === TASK_KEY));
        const causes = rows.map((row) => `${row.kind} ${row.cause}`);
        for (const want of [
          'labels task:open',
          'labels job:queued',
          'labels job:cancelled',
          'labels claim:granted',
        ]) {
          assert.ok(causes.includes(want), `${want} in ${causes.join(', ')}`);
        }
        const comment = rows.find((row) => row.kind === 'comment');
        assert.equal(comment?.cause, 'task:escalated');
        assert.equal(comment?.body, 'which schema?');
        assert.deepEqual(
          rows.map((row) => row.id),
          [...rows.map((row) => row.id)].sort((left, right) => left - right),
        );
        const [facts] = await store.github.labelStates([TASK_KEY]);
        assert.deepEqual(facts, { key: TASK_KEY, state: 'escalated', held: false, jobStatus: null });
      }));

    test("writes a resolve's note as one comment row with who resolved, after its labels row; no note, none", () =>
      withFixture(harness, async ({ store }) => {
        const alice = { name: 'alice@box' };
        const note = 'use the staging database\n@octocat see #8 ```sh\nrm -rf /\n```';
        for (const key of [TASK_KEY, 'local-3']) {
          await store.tasks.add({ key });
          assert.ok(
            (await store.lifecycle.escalate({ key, reason: 'which database?', by: { name: 'agent' } })).ok,
          );
          await store.lifecycle.transition({ key, action: 'resolve', by: alice, reason: note });
        }
        assert.ok(
          (await store.lifecycle.escalate({ key: TASK_KEY, reason: 'and now?', by: { name: 'agent' } })).ok,
        );
        await store.lifecycle.transition({ key: TASK_KEY, action: 'resolve', by: alice });
        const rows = await store.github.pending({ limit: 100 });
        assert.ok(
          rows.every((row) => row.key === TASK_KEY),
          'nothing for a task without a GitHub key',
        );
        const comments = rows.filter((row) => row.kind === 'comment');
        assert.deepEqual(
          comments.map((row) => [row.cause, row.body, row.actor]),
          [
            ['task:escalated', 'which database?', null],
            ['task:resolved', note, 'alice@box'],
            ['task:escalated', 'and now?', null],
          ],
          'one row for the note, as written; the resolve without a note adds none',
        );
        const resolved = rows.findIndex((row) => row.cause === 'task:resolved');
        assert.equal(`${rows[resolved - 1]?.kind} ${rows[resolved - 1]?.cause}`, 'labels task:open');
        assert.ok(rows.filter((row) => row.kind === 'labels').every((row) => row.actor === null));
      }));

    test("writes a github: job's batch take, its finish and its retry, and nothing for another task's", () =>
      withFixture(harness, async ({ store }) => {
        for (const key of [TASK_KEY, 'local-2']) await store.jobs.enqueue({ key });
        const session = await givenSession(store);
        const taken = await store.jobs.batch({ session: session.id, take: 2, leaseMs: 60_000 });
        assert.equal(taken.taken.length, 2);
        const finish = taken.taken.map((job) => ({
          id: job.id,
          epoch: job.epoch,
          status: 'failed' as const,
        }));
        const done = await store.jobs.batch({ session: session.id, finish });
        assert.ok(done.finished.every((member) => member.ok));
        for (const job of taken.taken) assert.equal((await store.jobs.retry({ id: job.id })).created, true);
        const rows = await store.github.pending({ limit: 100 });
        assert.deepEqual(
          rows.filter((row) => row.cause.startsWith('job:')).map((row) => `${row.key} ${row.cause}`),
          ['job:queued', 'job:running', 'job:failed', 'job:queued'].map((cause) => `${TASK_KEY} ${cause}`),
        );
        assert.ok(rows.every((row) => row.key === TASK_KEY));
      }));

    test('holds an issue back after a failure so its rows stay in order, and marks rows applied once', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: TASK_KEY });
        await store.tasks.add({ key: 'github:acme/api#8' });
        const first = await store.github.pending({ limit: 100 });
        const mine = first.filter((row) => row.key === TASK_KEY).map((row) => row.id);
        await store.github.failed({ ids: mine, error: 'GitHub 500', retryAfterMs: 60_000 });
        await store.jobs.enqueue({ key: TASK_KEY });
        const next = await store.github.pending({ limit: 100 });
        assert.ok(
          next.every((row) => row.key !== TASK_KEY),
          'a later row waits behind the failed one',
        );
        const waiting = await store.github.pending({ limit: 100, key: TASK_KEY });
        assert.equal(waiting.length, 2);
        assert.equal(waiting[0]?.attempts, 1);
        assert.equal(waiting[0]?.lastError, 'GitHub 500');
        await store.github.applied(waiting.map((row) => row.id));
        await store.github.applied(waiting.map((row) => row.id));
        assert.equal(await store.github.backlog(), 1);
        assert.equal((await store.github.pending({ limit: 100, prefix: 'github:other/' })).length, 0);
      }));

    test('prunes rows applied before the retention, oldest first, by the limit; never a pending one', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        for (const issue of [1, 2, 3]) await store.tasks.add({ key: `github:acme/api#${issue}` });
        const [one, two, three] = await store.github.pending({ limit: 100 });
        assert.ok(one !== undefined && two !== undefined && three !== undefined);
        await store.github.applied([one.id, two.id]);
        await store.github.failed({ ids: [three.id], error: 'GitHub 500', retryAfterMs: 0 });
        await fixture.moveClock(2 * DAY);
        await store.jobs.enqueue({ key: 'github:acme/api#1' });
        const recent = (await store.github.pending({ limit: 100, key: 'github:acme/api#1' })).map(
          (row) => row.id,
        );
        await store.github.applied(recent);
        const first = await store.github.prune({ olderThanMs: DAY, limit: 1 });
        assert.equal(first.removed, 1, 'at most the limit');
        const now = await store.now();
        assert.ok(
          first.cutoff <= now - DAY && first.cutoff > now - DAY - 60_000,
          'the database clock less a day',
        );
        assert.deepEqual(await outboxIds(fixture), [two.id, three.id, ...recent], 'the oldest went first');
        assert.equal((await store.github.prune({ olderThanMs: DAY, limit: 100 })).removed, 1);
        assert.equal((await store.github.prune({ olderThanMs: DAY, limit: 100 })).removed, 0);
        assert.deepEqual(await outboxIds(fixture), [three.id, ...recent], 'pending and recent rows stay');
        await fixture.moveClock(30 * DAY);
        assert.equal((await store.github.prune({ olderThanMs: DAY, limit: 100 })).removed, recent.length);
        const [left] = await store.github.pending({ limit: 100, key: 'github:acme/api#3' });
        assert.equal(
          left?.id,
          three.id,
          'a row never applied stays, however old and however often it failed',
        );
        assert.equal(left?.attempts, 1);
      }));

    test('names the repositories whose pending rows no sync has a cursor for, as the keys spell them', () =>
      withFixture(harness, async ({ store }) => {
        const keys = ['acme/api#1', 'acme/web#2', 'Acme/API#3', 'acme/hand#4', 'acme/hand#5', 'done/x#6'];
        for (const key of keys) await store.tasks.add({ key: `github:${key}` });
        await store.tasks.add({ key: 'local-7' });
        await store.github.saveCursor({ repo: 'acme/api', since: '2026-01-01T00:00:00Z' });
        await store.github.saveCursor({ repo: 'acme/web labels:ai', since: '2026-01-01T00:00:00Z' });
        await store.github.applied(
          (await store.github.pending({ limit: 10, key: 'github:done/x#6' })).map((row) => row.id),
        );
        const now = await store.now();
        const found = await store.github.unsynced();
        assert.deepEqual(
          found.map(({ repo, rows }) => ({ repo, rows })),
          [
            { repo: 'Acme/API', rows: 1 },
            { repo: 'acme/hand', rows: 2 },
          ],
        );
        assert.ok(found.every((one) => one.oldestAt <= now && one.oldestAt > now - 60_000));
      }));

    test('keeps cursors and cached answers, and audits repairs and re-checks', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: TASK_KEY });
        assert.equal(await store.github.cursor('acme/api'), null);
        await store.github.saveCursor({ repo: 'acme/api', since: '2026-01-01T00:00:00Z' });
        await store.github.saveCursor({ repo: 'acme/api', since: '2026-01-02T00:00:00Z' });
        assert.equal(await store.github.cursor('acme/api'), '2026-01-02T00:00:00Z');
        await store.github.cache({ url: '/x', etag: '"a"', body: '[]' });
        await store.github.cache({ url: '/x', etag: '"b"', body: '[1]' });
        assert.deepEqual(await store.github.cached('/x'), { etag: '"b"', body: '[1]' });
        const before = await store.github.backlog();
        await store.github.repair({ key: TASK_KEY, detail: { found: ['WIP'], expected: [] } });
        assert.equal(await store.github.backlog(), before + 1);
        await store.github.note({ type: 'github:recheck', key: TASK_KEY, detail: { checked: false } });
        const types = (await store.audit.list({ key: TASK_KEY })).map((entry) => entry.type);
        assert.ok(types.includes('github:label-repaired') && types.includes('github:recheck'));
      }));
  });
}
