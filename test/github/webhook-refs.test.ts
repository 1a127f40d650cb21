/**
 * The webhook against the stand-in, on both engines: a delivery `reopened` reopens a task finished
 * in Baton, another action on the same open issue does not; a merged pull request's references
 * are applied each as an issues event's, each on its own.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRepo } from '../../src/core/github.js';
import { applyIssue } from '../../src/github/apply.js';
import { bothEngines } from '../support/databases.js';
import type { StoredIssue } from '../support/github-standin.js';
import { drain, finish, key, REPO } from './fixture.js';
import { repository, withServer } from './webhook-server.js';

const applied = async (answer: Response): Promise<string[]> => {
  assert.equal(answer.status, 200);
  return ((await answer.json()) as { applied: string[] }).applied;
};

for (const db of bothEngines()) {
  describe(`github webhook deliveries (${db.name})`, () => {
    test('a delivery `reopened` reopens a task finished in Baton; any other action on the open issue does not', () =>
      withServer(db, async (f, post) => {
        f.gh.add(30);
        f.gh.close(30);
        f.gh.reopen(30);
        await f.backlog.sync({ labels: [] });
        await finish(f, 30);
        await drain(f);
        const issue = () => f.gh.issueJson(f.gh.issues.get(30) as StoredIssue);
        for (const action of ['edited', 'labeled', 'unlabeled']) {
          assert.deepEqual(await applied(await post('issues', { action, issue: issue(), repository })), [
            'unchanged',
          ]);
          assert.equal((await f.store.tasks.get(key(30)))?.state, 'done', action);
        }
        f.gh.close(30);
        f.gh.reopen(30);
        const reopened = await applied(
          await post('issues', { action: 'reopened', issue: issue(), repository }),
        );
        assert.ok(reopened.includes('reopened'));
        assert.equal((await f.store.tasks.get(key(30)))?.state, 'open');
      }));

    test('a merged pull request: the label filter holds, a PR or an unknown number is passed over, a deleted issue closes its task', () =>
      withServer(
        db,
        async (f, post) => {
          f.gh.add(10);
          f.gh.add(11, { isPr: true });
          f.gh.add(12, { labels: ['ai'] });
          f.gh.add(13, { labels: ['ai'] });
          await f.backlog.sync({ labels: ['ai'] });
          assert.equal((await f.store.tasks.get(key(12)))?.state, 'open');
          f.gh.delete(12);
          f.gh.close(13, { mergedPr: 40 });
          const pr = {
            number: 40,
            merged: true,
            title: 'Widget',
            body: 'fixes #10, closes #11, fixes #12, fixes #999, fixes #13',
          };
          const got = await applied(
            await post('pull_request', { action: 'closed', pull_request: pr, repository }),
          );
          assert.deepEqual(got, ['skipped', 'skipped', 'closed', 'skipped', 'done']);
          assert.equal(await f.store.tasks.get(key(10)), null, 'not labelled ai: not imported');
          assert.equal(await f.store.tasks.get(key(11)), null, 'a pull request: not a task');
          assert.equal((await f.store.tasks.get(key(12)))?.stateReason, 'issue deleted on GitHub');
          assert.equal((await f.store.tasks.get(key(13)))?.state, 'done', 'after the unknown #999');
          assert.ok(f.logs.some((line) => /#999: named by a merged pull request, not found/.test(line)));
        },
        ['ai'],
      ));

    test('a merged pull request: an issue GitHub fails to answer is named in the 503, the others are applied', () =>
      withServer(db, async (f, post) => {
        f.gh.add(20);
        f.gh.add(21);
        await f.backlog.sync({ labels: [] });
        f.gh.close(20, { mergedPr: 41 });
        f.gh.close(21, { mergedPr: 41 });
        f.gh.faults.push('500', '500', '500', '500');
        const pr = { number: 41, merged: true, title: 'Both', body: 'Fixes #20. Fixes #21.' };
        const answer = await post('pull_request', { action: 'closed', pull_request: pr, repository });
        assert.equal(answer.status, 503);
        const body = (await answer.json()) as { error: { code: string; message: string } };
        assert.equal(body.error.code, 'github_unavailable');
        assert.match(body.error.message, /#20 .*other issues were applied/);
        assert.equal((await f.store.tasks.get(key(20)))?.state, 'open');
        assert.equal((await f.store.tasks.get(key(21)))?.state, 'done');
      }));

    test('a delivery racing the sync on a new issue: both applied, one adds it, the other updates it', () =>
      withServer(db, async (f) => {
        f.gh.add(50);
        const { deps } = f.backlog;
        const issue = await deps.api.issue(parseRepo(REPO), 50);
        // Both read "no task" before either adds it: the second add finds it there.
        const outcomes = await Promise.all([1, 2, 3].map(() => applyIssue(deps, parseRepo(REPO), issue)));
        assert.equal(outcomes.filter((got) => got.includes('added')).length, 1, JSON.stringify(outcomes));
        assert.equal((await f.store.tasks.get(key(50)))?.state, 'open');
        assert.equal((await f.backlog.sync({ labels: [] })).added, 0, 'and the sync adds nothing');
      }));
  });
}
