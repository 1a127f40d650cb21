/**
 * A webhook delivery that meets the token's rate limit spent, on both engines. GitHub gives a
 * delivery 10 s to be answered 2xx and does not send a failed one again on its own, so the webhook's
 * client does not wait the limit out (it waited up to three resets): the delivery is answered 202
 * at once, `deferred`, with one log line naming the limit and its reset, and the change is not
 * lost: it is newer than the sync's cursor, so the next sync after the reset reads and applies it.
 * An issue deleted or reopened is not deferred, since no sync sees it: 503, to be redelivered.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { OpenApiChecker } from '../support/github-openapi.js';
import type { StoredIssue } from '../support/github-standin.js';
import { drain, finish, key, REPO } from './fixture.js';
import { repository, withServer } from './webhook-server.js';

/** Ten days: waited out, even at the tests' 20 ms a second, it would hold the delivery for hours. */
const FAR_S = 864_000;

interface DeferredAnswer {
  readonly ok: boolean;
  readonly applied: readonly string[];
  readonly deferred: readonly string[];
  readonly message: string;
}

// GitHub's shared responses (a 403's body) load on first use, for seconds: here, not while the
// stand-in answers the delivery's one request, which the client would abandon at the fixture's
// timeout and send again.
before(() => {
  const body = { message: 'API rate limit exceeded', documentation_url: 'https://docs.github.com/rest' };
  new OpenApiChecker().check({
    method: 'GET',
    route: '/repos/{owner}/{repo}/issues/{issue_number}',
    status: 403,
    body,
  });
});

for (const db of bothEngines()) {
  describe(`a webhook delivery under a spent rate limit (${db.name})`, () => {
    test(
      'is answered 202 at once, deferred, said once; the next sync after the reset applies it',
      { timeout: 60_000 },
      () =>
        withServer(db, async (f, post) => {
          f.gh.add(1);
          f.gh.add(2);
          await f.backlog.sync({ labels: [] });
          const cursor = await f.store.github.cursor(REPO);
          f.gh.close(2); // a change on GitHub, after the sync's last page
          const issue = f.gh.issues.get(2) as StoredIssue;
          assert.ok(
            cursor !== null && issue.updatedAt > cursor,
            `${issue.updatedAt} after the cursor ${cursor ?? ''}`,
          );
          f.gh.rateLimit = { status: 403, liftsInS: FAR_S };
          f.gh.down = 'primary';
          const sent = f.gh.sent.length;
          const answer = await post('issues', { action: 'closed', issue: f.gh.issueJson(issue), repository });
          assert.equal(answer.status, 202);
          const body = (await answer.json()) as DeferredAnswer;
          assert.deepEqual([body.ok, body.applied, body.deferred], [true, [], [key(2)]]);
          assert.match(
            body.message,
            /^the token's primary rate limit is spent until \d{4}-\d\d-\d\dT[^;]+; the next sync after it lifts applies the change$/,
          );
          assert.equal(f.gh.sent.length - sent, 1, 'GitHub asked once, not again after the reset');
          const said = f.logs.filter((l) => l.startsWith('GitHub webhook:'));
          assert.deepEqual(said, [
            `GitHub webhook: ${key(2)} left to the next sync: ${body.message.split(';')[0] ?? ''}`,
          ]);
          assert.ok(!f.logs.some((l) => /waiting/.test(l)), 'no wait announced');
          assert.equal((await f.store.tasks.get(key(2)))?.state, 'open', 'not applied yet');
          f.gh.down = null; // the limit lifts
          const report = await f.backlog.sync({ labels: [] });
          assert.equal(report.closed, 1, JSON.stringify(report));
          assert.equal((await f.store.tasks.get(key(2)))?.state, 'closed', 'the deferred change, applied');
        }),
    );

    test(
      "a merged pull request's issues are deferred together: the limit is the token's",
      { timeout: 60_000 },
      () =>
        withServer(db, async (f, post) => {
          f.gh.add(3);
          f.gh.add(4);
          await f.backlog.sync({ labels: [] });
          f.gh.close(3, { mergedPr: 9 });
          f.gh.close(4, { mergedPr: 9 });
          f.gh.rateLimit = { status: 429, liftsInS: FAR_S };
          f.gh.down = 'primary';
          const sent = f.gh.sent.length;
          const pr = { number: 9, merged: true, title: 'Both', body: 'Fixes #3. Fixes #4.' };
          const answer = await post('pull_request', { action: 'closed', pull_request: pr, repository });
          assert.equal(answer.status, 202);
          const body = (await answer.json()) as DeferredAnswer;
          assert.deepEqual([body.applied, body.deferred], [[], [key(3), key(4)]]);
          assert.equal(f.gh.sent.length - sent, 1, 'one request: #4 is not asked under the same limit');
          assert.equal(f.logs.filter((l) => l.startsWith('GitHub webhook:')).length, 1);
          f.gh.down = null;
          await f.backlog.sync({ labels: [] });
          assert.equal((await f.store.tasks.get(key(3)))?.state, 'done');
          assert.equal((await f.store.tasks.get(key(4)))?.state, 'done');
        }),
    );

    test(
      'a deleted or reopened issue is answered 503, not deferred (no sync sees it); redelivered, applied',
      { timeout: 60_000 },
      () =>
        withServer(db, async (f, post) => {
          f.gh.add(5);
          f.gh.add(6);
          await f.backlog.sync({ labels: [] });
          await finish(f, 6);
          await drain(f);
          const deleted = f.gh.issueJson(f.gh.issues.get(5) as StoredIssue);
          f.gh.delete(5);
          f.gh.close(6);
          f.gh.reopen(6);
          const reopened = f.gh.issueJson(f.gh.issues.get(6) as StoredIssue);
          f.gh.rateLimit = { status: 403, liftsInS: FAR_S };
          f.gh.down = 'primary';
          const deliveries = [
            { action: 'deleted', issue: deleted, repository },
            { action: 'closed', issue: reopened, repository },
            { action: 'reopened', issue: reopened, repository },
          ];
          const statuses = [];
          for (const delivery of deliveries) statuses.push((await post('issues', delivery)).status);
          assert.deepEqual(statuses, [503, 202, 503]);
          const said = f.logs.filter((l) => l.startsWith('GitHub webhook:'));
          assert.equal(said.length, 3, said.join('\n'));
          assert.match(
            said[0] ?? '',
            /#5 deleted: not applied, the token's primary rate limit is spent until/,
          );
          f.gh.down = null; // the limit lifts: the sync sees an open issue and a finished task
          await f.backlog.sync({ labels: [] });
          assert.equal(
            (await f.store.tasks.get(key(6)))?.state,
            'done',
            'the sync alone cannot tell the reopen',
          );
          for (const delivery of [deliveries[0], deliveries[2]]) {
            assert.equal((await post('issues', delivery)).status, 200, 'redelivered after the reset');
          }
          assert.equal((await f.store.tasks.get(key(5)))?.stateReason, 'issue deleted on GitHub');
          assert.equal((await f.store.tasks.get(key(6)))?.state, 'open');
        }),
    );
  });
}
