/**
 * One issue, one task, whatever the spelling of its repository: GitHub's owner and repository
 * names are case-insensitive (`acme/api` is `Acme/API`), and Baton's task keys name the repository
 * in lower case, for the sync, the webhook and a hand-typed key alike (decision 0013).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRepo } from '../../src/core/github.js';
import { validateKey } from '../../src/core/validate.js';
import { openBacklog } from '../../src/github/backlog.js';
import { bothEngines } from '../support/databases.js';
import type { StoredIssue } from '../support/github-standin.js';
import { githubFixture, key, type GithubFixture } from './fixture.js';
import { withServer } from './webhook-server.js';

/** The backlog of the fixture's repository spelled `spelling`, on the fixture's store and stand-in. */
const spelled = (f: GithubFixture, spelling: string) =>
  openBacklog({ store: f.store, repo: parseRepo(spelling), env: f.env, log: (l) => f.logs.push(l) });

const githubKeys = async (f: GithubFixture): Promise<string[]> =>
  (await f.store.tasks.list({ limit: 100 })).map((t) => t.key).sort();

for (const db of bothEngines()) {
  describe(`a repository spelled two ways (${db.name})`, () => {
    for (const [first, second] of [
      ['acme/api', 'Acme/API'],
      ['Acme/API', 'acme/api'],
    ] as const) {
      test(`a sync as ${first}, then as ${second}: one task per issue, keyed in lower case`, async () => {
        const f = await githubFixture(db);
        try {
          f.gh.add(1);
          assert.equal((await spelled(f, first).sync({ labels: [] })).added, 1);
          f.gh.add(2);
          f.gh.close(1);
          const again = await spelled(f, second).sync({ labels: [] });
          assert.deepEqual([again.added, again.closed], [1, 1], 'the one cursor, and #1 found under it');
          assert.deepEqual(await githubKeys(f), [key(1), key(2)]);
          assert.equal((await f.store.tasks.get(key(1)))?.state, 'closed');
          assert.deepEqual(f.checker.failures, []);
        } finally {
          await f.close();
        }
      });
    }

    test("a webhook delivery with GitHub's spelling applies to the task the sync made", () =>
      withServer(
        db,
        async (f, post) => {
          f.gh.add(3);
          await spelled(f, 'Acme/API').sync({ labels: [] });
          f.gh.setLabels(3, ['bug']);
          const issue = f.gh.issueJson(f.gh.issues.get(3) as StoredIssue);
          const repository = { full_name: 'Acme/API', name: 'API', owner: { login: 'Acme' } };
          const answer = await post('issues', { action: 'labeled', issue, repository });
          assert.equal(answer.status, 200, await answer.clone().text());
          assert.deepEqual(await githubKeys(f), [key(3)]);
          assert.deepEqual((await f.store.tasks.get(key(3)))?.labels, ['bug']);
        },
        [],
        'acme/api',
      ));

    test("a backlog opened as Acme/API projects its tasks' label changes to GitHub", async () => {
      const f = await githubFixture(db);
      try {
        f.gh.add(5);
        const backlog = spelled(f, 'Acme/API');
        await backlog.sync({ labels: [] });
        await f.store.jobs.enqueue({ key: key(5) });
        const report = await backlog.project();
        assert.equal(report.applied > 0, true, JSON.stringify(report));
        assert.equal(await f.store.github.backlog(), 0, 'every row applied');
        assert.deepEqual(f.gh.labels(5), ['ai-dev-queued']);
      } finally {
        await f.close();
      }
    });

    test('a hand-typed key in another spelling names the same task', async () => {
      const f = await githubFixture(db);
      try {
        f.gh.add(4);
        await spelled(f, 'ACME/Api').sync({ labels: [] });
        const typed = validateKey('github:Acme/API#4');
        assert.equal(typed, key(4));
        const { job } = await f.store.jobs.enqueue({ key: typed });
        assert.equal(job.key, key(4));
        assert.deepEqual(await githubKeys(f), [key(4)]);
      } finally {
        await f.close();
      }
    });
  });
}

describe('validateKey and GitHub issue keys', () => {
  test('lowers the repository of an issue key only', () => {
    assert.equal(validateKey('github:Acme/API#7'), 'github:acme/api#7');
    assert.equal(validateKey('github:acme/api#7'), 'github:acme/api#7');
    // Not an issue's key (no number, a space-less name GitHub would refuse): kept as typed.
    assert.equal(validateKey('github:Acme/API'), 'github:Acme/API');
    assert.equal(validateKey('github:Acme_X/api#7'), 'github:Acme_X/api#7');
    assert.equal(validateKey('GitHub:Acme/API#7'), 'GitHub:Acme/API#7');
    assert.equal(validateKey('JIRA-12'), 'JIRA-12');
  });
});
