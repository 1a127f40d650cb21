/**
 * The webhook against the stand-in, on both engines: a delivery `reopened` reopens a task finished
 * in Baton, another action on the same open issue does not.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import type { StoredIssue } from '../support/github-standin.js';
import { drain, finish, key } from './fixture.js';
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
  });
}
