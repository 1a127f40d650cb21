/**
 * `POST /v1/github/webhook`, mounted on a bare Hono app served by @hono/node-server (the way the
 * HTTP server mounts it): a signed issue-closed event cancels a queued job at once, without a
 * poll; an unsigned or wrongly signed one gets 401 and changes nothing; a merged pull request
 * that says it fixes an issue finishes that issue's task.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Webhooks } from '@octokit/webhooks';
import { closingReferences } from '../../src/github/webhook.js';
import { parseBind } from '../../src/http/bind.js';
import { meterStore, serveHttp } from '../../src/http/server.js';
import { BODY_MAX, WEBHOOK_BODY_MAX } from '../../src/http/app.js';
import { bothEngines } from '../support/databases.js';
import { serve as batonServe } from '../http/support.js';
import type { StoredIssue } from '../support/github-standin.js';
import { githubFixture, key, REPO } from './fixture.js';
import { repository, SECRET, withServer } from './webhook-server.js';

describe('closing references', () => {
  test('reads GitHub closing keywords and nothing else', () => {
    assert.deepEqual(closingReferences('Fixes #12, closes #3 and resolved: #4; see #5'), [12, 3, 4]);
    assert.deepEqual(closingReferences('mentions #9'), []);
  });
});

for (const db of bothEngines()) {
  describe(`github webhook (${db.name})`, () => {
    test('a signed issue-closed event cancels the queued job at once; an unsigned one is refused and changes nothing', () =>
      withServer(db, async (f, post) => {
        f.gh.add(1);
        f.gh.add(2);
        await f.backlog.sync({ labels: [] });
        const one = (await f.store.jobs.enqueue({ key: key(1) })).job;
        const two = (await f.store.jobs.enqueue({ key: key(2) })).job;
        f.gh.close(1);
        f.gh.close(2);
        const issue = (n: number) => f.gh.issueJson(f.gh.issues.get(n) as StoredIssue);
        const unsigned = await post('issues', { action: 'closed', issue: issue(2), repository }, null);
        assert.equal(unsigned.status, 401);
        const wrong = await post(
          'issues',
          { action: 'closed', issue: issue(2), repository },
          'not-the-secret',
        );
        assert.equal(wrong.status, 401);
        const refused = (await wrong.json()) as { error: { code: string; hint: string } };
        assert.equal(refused.error.code, 'unauthorized');
        assert.match(refused.error.hint, /GITHUB_WEBHOOK_SECRET/);
        assert.equal((await f.store.jobs.get(two.id))?.status, 'queued', 'refused: nothing changed');
        assert.equal((await f.store.tasks.get(key(2)))?.state, 'open');
        const signed = await post('issues', { action: 'closed', issue: issue(1), repository });
        assert.equal(signed.status, 200);
        assert.deepEqual(((await signed.json()) as { applied: string[] }).applied, ['closed']);
        const job = await f.store.jobs.get(one.id);
        assert.equal(job?.status, 'cancelled');
        assert.match(job?.reason ?? '', /issue closed on GitHub/);
        const again = await post('issues', { action: 'closed', issue: issue(1), repository });
        assert.deepEqual(((await again.json()) as { applied: string[] }).applied, ['unchanged']);
      }));

    test('a merged pull request that fixes an issue finishes its task; other repositories and events are ignored', () =>
      withServer(db, async (f, post) => {
        f.gh.add(4);
        await f.backlog.sync({ labels: [] });
        f.gh.close(4, { mergedPr: 10 });
        const other = await post('issues', {
          action: 'closed',
          issue: f.gh.issueJson(f.gh.issues.get(4) as StoredIssue),
          repository: { full_name: 'someone/else' },
        });
        assert.equal(other.status, 202);
        assert.equal((await f.store.tasks.get(key(4)))?.state, 'open');
        const pr = { number: 10, merged: true, title: 'Faster widget', body: 'Fixes #4' };
        const merged = await post('pull_request', { action: 'closed', pull_request: pr, repository });
        assert.equal(merged.status, 200);
        assert.equal((await f.store.tasks.get(key(4)))?.state, 'done');
        assert.equal((await post('ping', { zen: 'hi', repository })).status, 202);
      }));

    test('a late, out-of-order or replayed delivery applies the issue as it is now, not as it says', () =>
      withServer(db, async (f, post) => {
        f.gh.add(5);
        await f.backlog.sync({ labels: [] });
        const { job } = await f.store.jobs.enqueue({ key: key(5) });
        f.gh.close(5);
        const closed = f.gh.issueJson(f.gh.issues.get(5) as StoredIssue);
        f.gh.reopen(5);
        const late = await post('issues', { action: 'closed', issue: closed, repository });
        assert.equal(late.status, 200);
        assert.deepEqual(((await late.json()) as { applied: string[] }).applied, ['unchanged']);
        assert.equal((await f.store.tasks.get(key(5)))?.state, 'open', 'the issue is open on GitHub');
        assert.equal((await f.store.jobs.get(job.id))?.status, 'queued', 'its job was not cancelled');
      }));

    test('a delivery for an issue deleted on GitHub (410 on the re-read) closes its task', () =>
      withServer(db, async (f, post) => {
        f.gh.add(8);
        await f.backlog.sync({ labels: [] });
        const issue = f.gh.issueJson(f.gh.issues.get(8) as StoredIssue);
        f.gh.delete(8);
        assert.equal((await post('issues', { action: 'deleted', issue, repository })).status, 200);
        assert.equal((await f.store.tasks.get(key(8)))?.stateReason, 'issue deleted on GitHub');
      }));

    test('a delivery adds only issues the sync would import (--github-label)', () =>
      withServer(
        db,
        async (f, post) => {
          f.gh.add(6, { labels: ['internal'] });
          f.gh.add(7, { labels: ['ai'] });
          for (const n of [6, 7]) {
            const issue = f.gh.issueJson(f.gh.issues.get(n) as StoredIssue);
            assert.equal((await post('issues', { action: 'opened', issue, repository })).status, 200);
          }
          assert.equal(await f.store.tasks.get(key(6)), null, 'not labelled ai: not imported');
          assert.equal((await f.store.tasks.get(key(7)))?.state, 'open');
        },
        ['ai'],
      ));

    test('`baton serve --github --github-label` adds only labelled issues from deliveries; the label alone is refused', async () => {
      const f = await githubFixture(db);
      const env = { ...f.env, GITHUB_WEBHOOK_SECRET: SECRET };
      const served = await batonServe(
        f.db,
        ['serve', '--http', '127.0.0.1:0', '--github', REPO, '--github-label', 'ai'],
        env,
      );
      try {
        f.gh.add(6, { labels: ['internal'] });
        f.gh.add(7, { labels: ['ai'] });
        for (const n of [6, 7]) {
          const text = JSON.stringify({
            action: 'opened',
            issue: f.gh.issueJson(f.gh.issues.get(n) as StoredIssue),
            repository,
          });
          const answer = await fetch(`${served.url}/v1/github/webhook`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-github-event': 'issues',
              'x-hub-signature-256': await new Webhooks({ secret: SECRET }).sign(text),
            },
            body: text,
          });
          assert.equal(answer.status, 200, `delivery of #${n}`);
        }
        // The webhook takes GitHub's 25 MB, past the API's bound, and no more.
        for (const [bytes, status] of [
          [BODY_MAX + 1, 401],
          [WEBHOOK_BODY_MAX + 1, 413],
        ] as const) {
          const big = await fetch(`${served.url}/v1/github/webhook`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-github-event': 'issues' },
            body: 'a'.repeat(bytes),
          });
          assert.equal(big.status, status, `a body of ${bytes} bytes`);
        }
        assert.equal(await f.store.tasks.get(key(6)), null, 'not labelled ai: not imported');
        assert.equal((await f.store.tasks.get(key(7)))?.state, 'open');
        assert.deepEqual(f.checker.failures, []);
      } finally {
        await served.stop();
        await f.close();
      }
      const refusal = (dbPath: string, args: readonly string[]) =>
        batonServe(dbPath, args, env).then(
          async (s) => `served at ${s.url} (${String(await s.stop())})`,
          (error: Error) => error.message,
        );
      for (const command of [
        ['serve', '--http', '127.0.0.1:0'],
        ['up', '--no-http'],
      ]) {
        assert.match(
          await refusal(f.db, [...command, '--github-label', 'ai']),
          /exited 2: .*--github-label filters the GitHub issues Baton imports, and no --github/,
        );
        assert.match(
          await refusal(f.db, [...command, '--label-wip', 'busy']),
          /exited 2: baton: --label-wip is a setting of the GitHub backlog, and no --github was given/,
        );
      }
      for (const flags of [['--github-every', '5m'], ['--no-github-comments'], ['--token-env', 'GH']]) {
        assert.match(
          await refusal(f.db, ['up', '--no-http', ...flags]),
          new RegExp(`exited 2: baton: ${flags[0]} is a setting of the GitHub backlog, and no --github`),
        );
      }
      for (const [args, message] of [
        [
          ['up', '--no-http', '--github', REPO, '--github-label', ' '],
          /--github-label " " is not a GitHub label name/,
        ],
        [['github', 'sync', REPO, '--label', ''], /--label "" is not a GitHub label name/],
        [['github', 'sync', REPO, '--no-comments'], /--no-comments is a setting of --project/],
        [['up', '--no-http', '--agent-command', ' '], /the command template is empty/],
      ] as const) {
        assert.match(await refusal(f.db, args), new RegExp(`exited 2: baton: ${message.source}`));
      }
      // A bad --github-every is refused before the store opens: no database file is made.
      const fresh = join(mkdtempSync(join(tmpdir(), 'baton-every-')), 'baton.db');
      assert.match(
        await refusal(fresh, ['up', '--no-http', '--github', REPO, '--github-every', '0s']),
        /exited 2: baton: --github-every must be from 1 s to 24 h, got "0s"/,
      );
      assert.equal(existsSync(fresh), false, 'no database file made for a bad --github-every');
      rmSync(dirname(fresh), { recursive: true, force: true });
    });

    test('served by the HTTP server with --auth required: the webhook needs its signature, not a bearer token', async () => {
      const f = await githubFixture(db);
      const server = await serveHttp(meterStore(f.store), {
        bind: parseBind('127.0.0.1:0'),
        auth: 'required',
        routes: [f.backlog.webhook(SECRET)],
      });
      try {
        f.gh.add(7);
        await f.backlog.sync({ labels: [] });
        const job = (await f.store.jobs.enqueue({ key: key(7) })).job;
        f.gh.close(7);
        const text = JSON.stringify({
          action: 'closed',
          issue: f.gh.issueJson(f.gh.issues.get(7) as StoredIssue),
          repository,
        });
        const deliver = async (signature: string | null) =>
          fetch(`${server.url}/v1/github/webhook`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-github-event': 'issues',
              ...(signature === null ? {} : { 'x-hub-signature-256': signature }),
            },
            body: text,
          });
        assert.equal((await fetch(`${server.url}/v1/jobs`)).status, 401, 'the API still wants a token');
        assert.equal((await deliver(null)).status, 401);
        assert.equal((await f.store.jobs.get(job.id))?.status, 'queued');
        const signed = await deliver(await new Webhooks({ secret: SECRET }).sign(text));
        assert.equal(signed.status, 200);
        assert.equal((await f.store.jobs.get(job.id))?.status, 'cancelled');
      } finally {
        await server.close();
        await f.close();
      }
    });
  });
}
