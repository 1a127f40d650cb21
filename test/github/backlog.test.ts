/**
 * The GitHub backlog against the stand-in, on both engines: import, closing, the labels'
 * projection through the outbox, hand-edited labels, comments, the re-check. Every response the
 * stand-in sent is checked against GitHub's OpenAPI description at the end of each test.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Lifecycle } from '../../src/coordinator/lifecycle.js';
import { applyIssue } from '../../src/github/apply.js';
import { bothEngines } from '../support/databases.js';
import { drain, finish, githubFixture, key, type GithubFixture } from './fixture.js';

const by = { name: 'alice@box' };

async function withFixture(
  db: Parameters<typeof githubFixture>[0],
  body: (f: GithubFixture) => Promise<void>,
  o: { comments?: boolean } = {},
): Promise<void> {
  const f = await githubFixture(db, o);
  try {
    await body(f);
    assert.ok(f.checker.checked.length > 0, 'the stand-in answered');
    assert.deepEqual(f.checker.failures, [], 'every response matches GitHub OpenAPI description');
  } finally {
    await f.close();
  }
}

for (const db of bothEngines()) {
  describe(`github backlog (${db.name})`, () => {
    test('imports open issues once, skips pull requests, and asks GitHub conditionally the next time', () =>
      withFixture(db, async (f) => {
        f.gh.add(1, { labels: ['bug'] });
        f.gh.add(2);
        f.gh.add(3, { isPr: true });
        const first = await f.backlog.sync({ labels: [] });
        assert.equal(first.added, 2);
        const task = await f.store.tasks.get(key(1));
        assert.equal(task?.title, 'Issue 1: make the widget faster for everyone');
        assert.match(task?.body ?? '', /three seconds/);
        assert.equal(task?.url, 'https://github.example/acme/api/issues/1');
        assert.deepEqual(task?.labels, ['bug']);
        assert.equal(await f.store.tasks.get(key(3)), null, 'a pull request is no task');
        const again = await f.backlog.sync({ labels: [] });
        assert.equal(again.added, 0);
        const third = await f.backlog.sync({ labels: [] });
        assert.equal(third.notModified, true, 'nothing changed: GitHub answered 304');
        assert.ok(f.gh.sent.some((r) => r.status === 304));
        assert.equal((await f.store.tasks.list({})).length, 2);
      }));

    test('gates issues labelled needs-design-review, bounces vague ones, and imports only the labels asked for', () =>
      withFixture(db, async (f) => {
        await new Lifecycle(f.store).setSetting({ name: 'vague-words', value: 5, by });
        f.gh.add(1, { labels: ['needs-design-review', 'ai'] });
        f.gh.add(2, { title: 'fix', body: '', labels: ['ai'] });
        f.gh.add(3, { labels: ['other'] });
        const r = await f.backlog.sync({ labels: ['ai'] });
        assert.equal(r.added, 2);
        assert.equal((await f.store.tasks.get(key(1)))?.gate, 'design');
        const vague = await f.store.tasks.get(key(2));
        assert.equal(vague?.state, 'escalated');
        assert.equal(vague?.stateReason, 'insufficient-info');
        assert.equal(await f.store.tasks.get(key(3)), null);
        await drain(f);
        assert.deepEqual(f.gh.labels(2), ['ai', 'human-action'], 'the vague one waits for a human');
        assert.match(f.gh.comments(2)[0] ?? '', /insufficient-info/);
      }));

    test('an issue closed on GitHub closes its task and cancels its queued job; closed by a merged PR, done', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        f.gh.add(2);
        await f.backlog.sync({ labels: [] });
        const { job } = await f.store.jobs.enqueue({ key: key(1) });
        f.gh.close(1);
        f.gh.close(2, { mergedPr: 9 });
        const r = await f.backlog.sync({ labels: [] });
        assert.equal(r.closed, 1);
        assert.equal(r.done, 1);
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'closed');
        const cancelled = await f.store.jobs.get(job.id);
        assert.equal(cancelled?.status, 'cancelled');
        assert.match(cancelled?.reason ?? '', /issue closed on GitHub/);
        const done = await f.store.tasks.get(key(2));
        assert.equal(done?.state, 'done');
        assert.match(done?.stateReason ?? '', /merged pull request #9/);
        f.gh.reopen(1);
        assert.equal((await f.backlog.sync({ labels: [] })).reopened, 1);
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'open');
        f.gh.add(3);
        await f.backlog.sync({ labels: [] });
        f.gh.close(3, { mergedPr: 11, reason: 'not_planned' });
        await f.backlog.sync({ labels: [] });
        const wontDo = await f.store.tasks.get(key(3));
        assert.equal(
          wontDo?.state,
          'closed',
          'closed as not planned: a merged PR that mentioned it does not make it done',
        );
      }));

    test('closed by a merged PR on the second page of its timeline (150 events before it): done', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        f.gh.close(1, { mergedPr: 21, eventsBefore: 150 });
        const r = await f.backlog.sync({ labels: [] });
        assert.deepEqual([r.done, r.closed], [1, 0]);
        const done = await f.store.tasks.get(key(1));
        assert.equal(done?.state, 'done');
        assert.match(done?.stateReason ?? '', /merged pull request #21\b/);
        const pages = f.gh.sent.filter((s) => s.route.endsWith('/timeline')).map((s) => s.body);
        assert.deepEqual(
          pages.map((p) => (p as unknown[]).length),
          [100, 52],
          'two pages, as the Link header said',
        );
      }));

    test('a merged PR past the first 1,000 timeline events is not looked for: closed, and logged', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        f.gh.close(1, { mergedPr: 23, eventsBefore: 1_000 });
        await f.backlog.sync({ labels: [] });
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'closed');
        assert.equal(f.gh.sent.filter((s) => s.route.endsWith('/timeline')).length, 10, 'ten pages read');
        assert.ok(f.logs.some((l) => /more than 1000 timeline events/.test(l)));
      }));

    test('closed as completed, mentioned only by a merged PR of another repository (a fork): closed', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        f.gh.close(1, { mergedPr: 22, from: 'mallory/api', reason: 'completed' });
        const r = await f.backlog.sync({ labels: [] });
        assert.deepEqual([r.done, r.closed], [0, 1]);
        const task = await f.store.tasks.get(key(1));
        assert.deepEqual([task?.state, task?.stateReason], ['closed', 'issue closed on GitHub']);
        const [timeline] = f.gh.sent.filter((s) => s.route.endsWith('/timeline'));
        assert.match(
          JSON.stringify(timeline?.body),
          /"full_name":"mallory\/api"/,
          'the stand-in says whose PR',
        );
      }));

    test('issues a --label pass skipped are imported by a later pass without it (a cursor per filter)', () =>
      withFixture(db, async (f) => {
        f.gh.add(1, { labels: ['ai'] });
        f.gh.add(2);
        assert.equal((await f.backlog.sync({ labels: ['ai'] })).added, 1);
        assert.equal(await f.store.tasks.get(key(2)), null, 'skipped by the filter');
        assert.equal((await f.backlog.sync({ labels: ['AI'] })).added, 0);
        const all = await f.backlog.sync({ labels: [] });
        assert.equal(all.added, 1, 'the pass without a filter reads what the filtered one skipped');
        assert.equal((await f.store.tasks.get(key(2)))?.state, 'open');
        assert.equal((await f.backlog.sync({ labels: ['ai'] })).added, 0);
      }));

    test('a task finished in Baton stays finished while its issue is still open (its PR not merged yet)', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        const session = await f.store.sessions.start({ kind: 'agent', host: 'box', pid: 1 });
        const claimed = await f.store.claims.acquire({ key: key(1), session: session.id });
        assert.ok(claimed.ok);
        const epoch = claimed.claim.epoch;
        await f.store.claims.release({ key: key(1), session: session.id, epoch, outcome: 'done' });
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'done');
        await drain(f);
        f.gh.setLabels(1, ['bug']);
        const r = await f.backlog.sync({ labels: [] });
        assert.equal(r.reopened, 0);
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'done', 'not handed out again');
        f.gh.close(1, { mergedPr: 12 });
        await f.backlog.sync({ labels: [] });
        f.gh.reopen(1);
        assert.equal((await f.backlog.sync({ labels: [] })).reopened, 1, 'reopened on GitHub: reopened');
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'open');
        // Finished again: the close seen before belongs to the earlier finish, so the issue (its
        // state_reason still `reopened`) does not reopen this one.
        await finish(f, 1);
        f.gh.setLabels(1, ['ui']);
        assert.equal((await f.backlog.sync({ labels: [] })).reopened, 0);
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'done', 'finished again: stays finished');
      }));

    test('an issue reopened before it was imported: its task, finished in Baton, is not reopened by every sync', () =>
      withFixture(db, async (f) => {
        f.gh.add(30);
        f.gh.close(30);
        f.gh.reopen(30);
        await f.backlog.sync({ labels: [] });
        await finish(f, 30);
        await drain(f);
        for (const labels of [['bug'], ['bug', 'ui']]) {
          f.gh.setLabels(30, labels);
          const r = await f.backlog.sync({ labels: [] });
          assert.equal(r.seen, 1, 'the issue was read again');
          assert.equal(r.reopened, 0);
          assert.equal((await f.store.tasks.get(key(30)))?.state, 'done', 'not handed out again');
        }
        const seen = await f.store.audit.list({ key: key(30), type: 'github:issue-closed' });
        assert.equal(seen.length, 0, 'never seen closed since the finish');
        f.gh.close(30, { mergedPr: 31 });
        await f.backlog.sync({ labels: [] });
        await f.backlog.sync({ labels: [] });
        const closed = await f.store.audit.list({ key: key(30), type: 'github:issue-closed' });
        assert.equal(closed.length, 1, 'seen closed: recorded once');
        f.gh.reopen(30);
        assert.equal((await f.backlog.sync({ labels: [] })).reopened, 1, 'reopened since the finish');
      }));

    test('an open copy read before the issue closed does not reopen its finished task (a page applied late)', () =>
      withFixture(db, async (f) => {
        f.gh.add(40);
        await f.backlog.sync({ labels: [] });
        await finish(f, 40);
        await drain(f);
        // A sync's page holds the issue open; a merge closes it before the page is applied, and
        // the close is seen (a delivery, another pass) first.
        const stale = await f.backlog.deps.api.issue(f.backlog.repo, 40);
        assert.equal(stale.state, 'open');
        f.gh.close(40, { mergedPr: 41 });
        await f.backlog.sync({ labels: [] });
        assert.equal((await f.store.audit.list({ key: key(40), type: 'github:issue-closed' })).length, 1);
        assert.deepEqual(await applyIssue(f.backlog.deps, f.backlog.repo, stale), ['unchanged']);
        assert.equal((await f.store.tasks.get(key(40)))?.state, 'done', 'not reopened by the older copy');
        f.gh.reopen(40);
        assert.equal((await f.backlog.sync({ labels: [] })).reopened, 1, 'a reopen after the close reopens');
        assert.equal((await f.store.tasks.get(key(40)))?.state, 'open');
      }));

    test('a design-review label on an escalated issue gates it once a human resolves it', () =>
      withFixture(db, async (f) => {
        const life = new Lifecycle(f.store);
        await life.setSetting({ name: 'vague-words', value: 20, by });
        f.gh.add(1, { title: 'fix', body: 'it is slow', labels: ['needs-design-review'] });
        await f.backlog.sync({ labels: [] });
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'escalated');
        f.gh.setLabels(1, ['needs-design-review', 'bug']);
        await f.backlog.sync({ labels: [] });
        await life.resolve({ key: key(1), by });
        f.gh.setLabels(1, ['needs-design-review', 'bug', 'p1']);
        await f.backlog.sync({ labels: [] });
        const task = await f.store.tasks.get(key(1));
        assert.equal(task?.state, 'open');
        assert.equal(task?.gate, 'design', 'behind the design gate, as the label asks');
      }));

    test('labels follow the task: queued, then WIP, then none; escalated shows human-action until resolved', () =>
      withFixture(db, async (f) => {
        f.gh.add(1, { labels: ['bug'] });
        await f.backlog.sync({ labels: [] });
        await f.store.jobs.enqueue({ key: key(1) });
        await drain(f);
        assert.deepEqual(f.gh.labels(1), ['ai-dev-queued', 'bug']);
        const [queued] = await f.store.jobs.list({ key: key(1) });
        await f.store.jobs.cancel({ id: queued?.id ?? 0 });
        const session = await f.session();
        const claim = await f.store.claims.acquire({ key: key(1), session });
        assert.ok(claim.ok);
        await drain(f);
        assert.deepEqual(f.gh.labels(1), ['WIP', 'bug']);
        await f.store.lifecycle.escalate({ key: key(1), reason: 'which database?', by, claim: undefined });
        await drain(f);
        assert.deepEqual(f.gh.labels(1), ['bug', 'human-action']);
        assert.match(f.gh.comments(1).join('\n'), /which database\?/);
        await new Lifecycle(f.store).resolve({ key: key(1), by });
        await drain(f);
        assert.deepEqual(f.gh.labels(1), ['bug']);
      }));

    test('comments can be turned off: the rows are applied and nothing is posted', () =>
      withFixture(
        db,
        async (f) => {
          f.gh.add(1);
          await f.backlog.sync({ labels: [] });
          await f.store.lifecycle.escalate({ key: key(1), reason: 'stuck', by, claim: undefined });
          await drain(f);
          assert.deepEqual(f.gh.labels(1), ['human-action']);
          assert.deepEqual(f.gh.comments(1), []);
        },
        { comments: false },
      ));

    test('a label edited by hand is put back by the next sync, and the ledger records the repair', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        await f.store.jobs.enqueue({ key: key(1) });
        await drain(f);
        f.gh.setLabels(1, ['WIP']);
        const r = await f.backlog.sync({ labels: [] });
        assert.equal(r.repaired, 1);
        const [row] = await f.store.audit.list({ key: key(1), type: 'github:label-repaired' });
        assert.deepEqual(row?.detail['found'], ['WIP']);
        assert.deepEqual(row?.detail['expected'], ['ai-dev-queued']);
        await drain(f);
        assert.deepEqual(f.gh.labels(1), ['ai-dev-queued']);
        assert.equal((await f.backlog.sync({ labels: [] })).repaired, 0, 'repaired once');
      }));

    test('an issue deleted on GitHub (410) closes its task: by the re-check, or by the projector, which drops its rows', () =>
      withFixture(db, async (f) => {
        for (const n of [1, 2]) f.gh.add(n);
        await f.backlog.sync({ labels: [] });
        const { job } = await f.store.jobs.enqueue({ key: key(1) });
        f.gh.issuesDisabled = true; // also 410, but not the issue's end: the run goes ahead
        assert.deepEqual(await f.backlog.recheck(job), { go: true, checked: false });
        f.gh.issuesDisabled = false;
        f.gh.delete(1);
        assert.deepEqual(await f.backlog.recheck(job), { go: false, reason: 'issue deleted on GitHub' });
        assert.equal((await f.store.jobs.get(job.id))?.status, 'cancelled');
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'closed');
        // #2's queued label is on its way when the issue goes: its rows are dropped, not retried.
        const two = (await f.store.jobs.enqueue({ key: key(2) })).job;
        f.gh.delete(2);
        await drain(f, 8_000);
        const task = await f.store.tasks.get(key(2));
        assert.deepEqual([task?.state, task?.stateReason], ['closed', 'issue deleted on GitHub']);
        assert.equal((await f.store.jobs.get(two.id))?.status, 'cancelled');
        assert.ok(f.gh.sent.filter((r) => r.status === 410).length >= 2, 'GitHub answered 410');
      }));

    test('the re-check cancels a run of a closed issue; with GitHub down the run goes ahead, not re-checked', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        f.gh.add(2);
        await f.backlog.sync({ labels: [] });
        const { job } = await f.store.jobs.enqueue({ key: key(1) });
        f.gh.close(1);
        const verdict = await f.backlog.recheck(job);
        assert.equal(verdict.go, false);
        assert.equal((await f.store.jobs.get(job.id))?.status, 'cancelled');
        const two = (await f.store.jobs.enqueue({ key: key(2) })).job;
        f.gh.down = '500';
        assert.deepEqual(await f.backlog.recheck(two), { go: true, checked: false });
        f.gh.down = null;
        const [row] = await f.store.audit.list({ key: key(2), type: 'github:recheck' });
        assert.equal(row?.detail['checked'], false);
        assert.doesNotMatch(JSON.stringify(row?.detail), /SECRET/);
      }));
  });
}
