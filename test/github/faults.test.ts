/**
 * The GitHub backlog under faults the stand-in injects (500s, primary and secondary rate limits,
 * timeouts, GitHub down for a while, a sync killed halfway): afterwards no task is duplicated,
 * no label change is lost, the labels converge to Baton's state, and the token appears in no
 * output. Every response is checked against GitHub's OpenAPI description, and the checker is
 * shown to fail on a response GitHub would never send.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { desiredLabels, DEFAULT_GITHUB_LABELS, parseRepo } from '../../src/core/github.js';
import { bothEngines, sqliteDatabase } from '../support/databases.js';
import { OpenApiChecker } from '../support/github-openapi.js';
import { drain, githubFixture, key, REPO, TOKEN, type GithubFixture } from './fixture.js';

async function withFixture(
  db: Parameters<typeof githubFixture>[0],
  body: (f: GithubFixture) => Promise<void>,
  options: Parameters<typeof githubFixture>[1] = {},
): Promise<void> {
  const f = await githubFixture(db, options);
  try {
    await body(f);
    assert.deepEqual(f.checker.failures, [], 'every response matches GitHub OpenAPI description');
    assert.ok(
      f.logs.every((l) => !l.includes(TOKEN)),
      'no token in the logs',
    );
    const ledger = JSON.stringify(await f.store.audit.list({ limit: 10_000 }));
    assert.ok(!ledger.includes(TOKEN), 'no token in the ledger');
    assert.ok(
      f.gh.authorizations.some((a) => a.includes(TOKEN)),
      'the token was sent to GitHub',
    );
  } finally {
    await f.close();
  }
}

/** Every issue's managed labels are what Baton's state says. */
async function converged(f: GithubFixture, numbers: readonly number[]): Promise<void> {
  for (const n of numbers) {
    const [facts] = await f.store.github.labelStates([key(n)]);
    assert.ok(facts !== undefined);
    const want = [...desiredLabels(facts, DEFAULT_GITHUB_LABELS)].sort();
    const managed = ['WIP', 'ai-dev-queued', 'human-action'];
    assert.deepEqual(
      f.gh.labels(n).filter((l) => managed.includes(l)),
      want,
      `issue ${n}`,
    );
  }
}

describe('the OpenAPI checker', () => {
  test('fails a response GitHub would never send', () => {
    const checker = new OpenApiChecker();
    const bad = { method: 'GET', route: '/repos/{owner}/{repo}/issues/{issue_number}', status: 200 };
    assert.notEqual(checker.check({ ...bad, body: { number: 'one', title: 7 } }), null);
    assert.notEqual(checker.check({ ...bad, status: 418, body: {} }), null, 'an undocumented status');
    const labels = {
      method: 'POST',
      route: '/repos/{owner}/{repo}/issues/{issue_number}/labels',
      status: 200,
    };
    assert.notEqual(checker.check({ ...labels, body: [{ name: 'x' }] }), null, 'a label without its fields');
  });
});

for (const db of bothEngines()) {
  describe(`github backlog under faults (${db.name})`, () => {
    test('a sync killed halfway and run again adds every issue exactly once', () =>
      withFixture(db, async (f) => {
        for (let n = 1; n <= 150; n++) f.gh.add(n);
        const half = await f.backlog.sync({ labels: [], pagesMax: 1 });
        assert.equal(half.added, 100);
        f.gh.add(151);
        f.gh.close(3);
        const rest = await f.backlog.sync({ labels: [] });
        assert.equal(rest.added, 51);
        const tasks = await f.store.tasks.list({ limit: 1000 });
        assert.equal(tasks.length, 151);
        assert.equal(new Set(tasks.map((t) => t.key)).size, 151);
        assert.equal((await f.store.tasks.get(key(3)))?.state, 'closed');
      }));

    test('a pass that fails halfway through a page reads that page again next time, not a 304', () =>
      withFixture(db, async (f) => {
        for (let n = 1; n <= 3; n++) f.gh.add(n);
        await f.backlog.sync({ labels: [] });
        f.gh.close(2, { reason: 'completed' });
        f.gh.add(4);
        f.gh.late = /\/timeline\?/; // #2's merged-PR look-up never answers: the pass stops at #2
        await assert.rejects(f.backlog.sync({ labels: [] }), { code: 'github_unavailable' });
        assert.equal(await f.store.tasks.get(key(4)), null, 'the pass stopped before #4');
        f.gh.late = null;
        const again = await f.backlog.sync({ labels: [] });
        assert.equal(again.notModified, false, 'the page was asked for again, unconditionally');
        assert.equal((await f.store.tasks.get(key(2)))?.state, 'closed');
        assert.equal((await f.store.tasks.get(key(4)))?.state, 'open');
      }));

    test("a timeline's page 2 lost: the next pass finds the merged PR there behind page 1's 304", () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        f.gh.close(1, { mergedPr: 31, eventsBefore: 120 });
        f.gh.late = /\/timeline\?.*page=2/; // page 1 answers (and is cached), page 2 never does
        await assert.rejects(f.backlog.sync({ labels: [] }), { code: 'github_unavailable' });
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'open', 'not closed on half a timeline');
        f.gh.late = null;
        await f.backlog.sync({ labels: [] });
        const task = await f.store.tasks.get(key(1));
        assert.deepEqual(
          [task?.state, task?.stateReason],
          ['done', 'issue closed on GitHub by merged pull request #31'],
        );
        const timeline = f.gh.sent.filter((s) => s.route.endsWith('/timeline')).map((s) => s.status);
        assert.deepEqual(timeline.slice(-2), [304, 200], 'page 1 from the cache, then page 2');
      }));

    test('500s, rate limits and timeouts are retried; the pass completes', () =>
      withFixture(db, async (f) => {
        for (let n = 1; n <= 5; n++) f.gh.add(n);
        f.gh.faults.push('500', 'primary', 'secondary', 'timeout');
        const r = await f.backlog.sync({ labels: [] });
        assert.equal(r.added, 5);
        const statuses = f.gh.sent.map((s) => s.status);
        assert.ok(statuses.includes(500) && statuses.filter((s) => s === 403).length >= 2);
      }));

    test('with GitHub down, state changes go on and the labels catch up when it returns', () =>
      withFixture(
        db,
        async (f) => {
          for (let n = 1; n <= 4; n++) f.gh.add(n);
          await f.backlog.sync({ labels: [] });
          f.gh.down = '500';
          const session = await f.session();
          await f.store.jobs.enqueue({ key: key(1) });
          await f.store.jobs.enqueue({ key: key(2) });
          await f.store.claims.acquire({ key: key(3), session });
          await f.store.lifecycle.escalate({ key: key(4), reason: 'needs a decision', by: { name: 'a' } });
          const report = await f.backlog.project();
          assert.equal(report.applied, 0);
          assert.ok(report.failed > 0);
          const [claimed] = await f.store.jobs.list({ key: key(2) });
          await f.store.jobs.cancel({ id: claimed?.id ?? 0 });
          f.gh.down = 'timeout';
          await f.backlog.project().catch(() => undefined);
          f.gh.down = null;
          await drain(f, 30_000);
          await converged(f, [1, 2, 3, 4]);
          assert.deepEqual(f.gh.labels(1), ['ai-dev-queued']);
          assert.deepEqual(f.gh.labels(2), []);
          assert.deepEqual(f.gh.labels(3), ['WIP']);
          assert.deepEqual(f.gh.labels(4), ['human-action']);
          assert.equal(f.gh.comments(4).length, 1, 'the escalation posted once');
          const failed = f.logs.filter((l) => /not projected yet/.test(l));
          assert.ok(failed.length > 0 && failed.every((l) => !l.includes(TOKEN)));
        },
        // Each request of the timeout pass is abandoned four times (three retries): 150 ms each,
        // not the fixture's 400, is still a timeout, and a request answered late under load is
        // only tried again (the drain below waits for every row).
        { timeoutMs: 150 },
      ));

    test('a comment GitHub made but whose answer was lost is posted once, not again by a retry', () =>
      withFixture(db, async (f) => {
        f.gh.add(5);
        await f.backlog.sync({ labels: [] });
        await f.store.lifecycle.escalate({ key: key(5), reason: 'which API?', by: { name: 'a' } });
        f.gh.late = /^POST .*\/comments$/;
        await f.backlog.project().catch(() => undefined);
        assert.equal(f.gh.comments(5).length, 1, 'GitHub made it; the answer never came');
        f.gh.late = null;
        await drain(f, 30_000);
        assert.equal(f.gh.comments(5).length, 1, 'the next pass found it and did not post again');
        // A process that posted and died before it marked the row applied (its attempts still 0).
        f.gh.add(6);
        await f.backlog.sync({ labels: [] });
        await f.store.lifecycle.escalate({ key: key(6), reason: 'which API?', by: { name: 'a' } });
        const rows = await f.store.github.pending({ limit: 100, key: key(6) });
        const row = rows.find((r) => r.kind === 'comment');
        assert.ok(row !== undefined && row.attempts === 0);
        await f.backlog.deps.api.comment(
          parseRepo(REPO),
          6,
          `posted before a crash\n\n<!-- baton:outbox:${row.id} -->`,
        );
        await drain(f, 30_000);
        assert.equal(f.gh.comments(6).length, 1, 'not posted a second time');
      }));
  });
}

describe('github sync errors', () => {
  test('a refused token is one line without the token', async () => {
    const f = await githubFixture(sqliteDatabase());
    try {
      f.gh.down = 'primary';
      const error = await f.backlog.sync({ labels: [] }).then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
      assert.equal(error?.code, 'github_unavailable');
      assert.ok(!(error?.message ?? '').includes(TOKEN));
      assert.equal((error?.message ?? '').split('\n').length, 1);
    } finally {
      await f.close();
    }
  });
});
