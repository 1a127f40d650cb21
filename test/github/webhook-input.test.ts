/**
 * What the GitHub webhook and the sync make of input they cannot use. A signed delivery whose
 * fields Baton reads have the wrong shape gets 400 naming the field, and changes nothing: GitHub is
 * not even asked. GitHub's default form encoding (`payload=<JSON>`) is taken, signed over the body
 * as sent. An API answer of the wrong shape is "GitHub unavailable" (the sync's next pass tries
 * again), never a 500 or a crashed loop. The `task:added` rows of the sync and the webhook name who
 * added the task. A server with no webhook mounted says so (404), not "a change needs a token".
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { serve } from '@hono/node-server';
import { Webhooks } from '@octokit/webhooks';
import { Hono } from 'hono';
import { GithubUnavailableError } from '../../src/core/errors.js';
import { parseRepo } from '../../src/core/github.js';
import { openBacklog } from '../../src/github/backlog.js';
import { githubWebhookRoutes } from '../../src/github/webhook.js';
import { parseBind } from '../../src/http/bind.js';
import { meterStore, serveHttp } from '../../src/http/server.js';
import { bothEngines } from '../support/databases.js';
import { serve as batonServe } from '../http/support.js';
import type { StoredIssue } from '../support/github-standin.js';
import { githubFixture, key, REPO } from './fixture.js';

const SECRET = 'whsec-stand-in-0123456789';
const repository = { full_name: REPO, name: 'api', owner: { login: 'acme' } };
const FORM = 'application/x-www-form-urlencoded';

/** Serves a Hono app on a free loopback port. */
async function listen(app: Hono): Promise<{ url: string; close: () => Promise<void> }> {
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return { url, close: () => new Promise<void>((resolve) => void server.close(() => resolve())) };
}

/** Posts `text` to the webhook as GitHub would, signed over `signed` (the text itself by default). */
async function deliver(
  url: string,
  event: string,
  text: string,
  o: { readonly type?: string; readonly signed?: string } = {},
): Promise<Response> {
  return fetch(`${url}/v1/github/webhook`, {
    method: 'POST',
    headers: {
      'content-type': o.type ?? 'application/json',
      'x-github-event': event,
      'x-github-delivery': '1',
      'x-hub-signature-256': await new Webhooks({ secret: SECRET }).sign(o.signed ?? text),
    },
    body: text,
  });
}

interface Refusal {
  readonly error: { readonly code: string; readonly message: string; readonly hint: string | null };
}

/** A raw issue as GitHub's REST API answers it, with only the fields Baton reads. */
const rawIssue = (n: number, extra: Record<string, unknown> = {}) => ({
  number: n,
  title: `Issue ${n}: make the widget faster for everyone`,
  body: 'The widget takes three seconds to load; it should take less than one.',
  state: 'open',
  labels: [],
  html_url: `https://github.example/${REPO}/issues/${n}`,
  updated_at: `2026-01-01T00:00:0${n}Z`,
  ...extra,
});

for (const db of bothEngines()) {
  describe(`github webhook input (${db.name})`, () => {
    test('a signed delivery of the wrong shape gets 400 naming the field, asks GitHub nothing, changes nothing', async () => {
      const f = await githubFixture(db);
      const app = new Hono();
      app.route('/', githubWebhookRoutes({ ...f.backlog.deps, repo: parseRepo(REPO), secret: SECRET }));
      const served = await listen(app);
      try {
        f.gh.add(1);
        await f.backlog.sync({ labels: [] });
        const { job } = await f.store.jobs.enqueue({ key: key(1) });
        f.gh.close(1, { mergedPr: 10 });
        const issue = f.gh.issueJson(f.gh.issues.get(1) as StoredIssue);
        const closed = (fields: Record<string, unknown>) =>
          JSON.stringify({ action: 'closed', issue, repository, ...fields });
        const merged = (pr: Record<string, unknown>) =>
          JSON.stringify({
            action: 'closed',
            repository,
            pull_request: { merged: true, body: 'Fixes #1', ...pr },
          });
        const cases: readonly (readonly [string, string, RegExp])[] = [
          ['issues', 'null', /^the payload is not a JSON object, got null$/],
          ['issues', '[1]', /^the payload is not a JSON object, got an array$/],
          [
            'issues',
            closed({ repository: { full_name: 5 } }),
            /^repository\.full_name: expected string, got 5$/,
          ],
          ['issues', closed({ repository: null }), /^repository: expected object, got null$/],
          ['issues', closed({ issue: 'str' }), /^issue: expected object, got "str"$/],
          ['issues', closed({ issue: undefined }), /^issue: expected object, got nothing$/],
          [
            'issues',
            closed({ issue: { ...issue, number: '1/comments' } }),
            /^issue\.number: must be a positive.*"1\/comments"/,
          ],
          [
            'issues',
            closed({ issue: { ...issue, number: 0 } }),
            /^issue\.number: must be a positive integer, got 0$/,
          ],
          ['issues', closed({ issue: { ...issue, number: 1.5 } }), /^issue\.number: .*got 1\.5$/],
          ['issues', closed({ issue: { ...issue, number: 1e300 } }), /^issue\.number: .*got 1e\+300$/],
          ['issues', closed({ action: 7 }), /^action: expected string, got 7$/],
          ['pull_request', merged({ title: 5 }), /^pull_request\.title: expected string, got 5$/],
          ['pull_request', merged({ merged: 'yes' }), /^pull_request\.merged: expected boolean, got "yes"$/],
          [
            'pull_request',
            JSON.stringify({ action: 'closed', repository, pull_request: [] }),
            /^pull_request: /,
          ],
        ];
        const requests = f.gh.requests;
        const ledger = (await f.store.audit.list({ limit: 10_000 })).length;
        for (const [event, text, message] of cases) {
          const answer = await deliver(served.url, event, text);
          const body = (await answer.json()) as Refusal;
          assert.equal(answer.status, 400, `${text.slice(0, 60)}: ${JSON.stringify(body)}`);
          assert.equal(body.error.code, 'invalid_input');
          assert.match(body.error.message, message);
          assert.match(body.error.hint ?? '', /GitHub/);
        }
        assert.equal(f.gh.requests, requests, 'GitHub was not asked anything');
        assert.equal((await f.store.audit.list({ limit: 10_000 })).length, ledger, 'no ledger row');
        assert.equal((await f.store.jobs.get(job.id))?.status, 'queued');
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'open');
        // The same deliveries well formed do change it: the refusals above were of the shape alone.
        const fine = await deliver(served.url, 'pull_request', merged({ title: 'Faster widget' }));
        assert.equal(fine.status, 200);
        assert.equal((await f.store.tasks.get(key(1)))?.state, 'done');
        assert.deepEqual(f.checker.failures, []);
      } finally {
        await served.close();
        await f.close();
      }
    });

    test("an issue's fields Baton does not read from a delivery (labels) may be missing: it reads the issue again", async () => {
      const f = await githubFixture(db);
      const app = new Hono();
      app.route('/', githubWebhookRoutes({ ...f.backlog.deps, repo: parseRepo(REPO), secret: SECRET }));
      const served = await listen(app);
      try {
        f.gh.add(2);
        f.gh.add(3);
        await f.backlog.sync({ labels: [] });
        for (const [n, labels] of [
          [2, undefined],
          [3, null],
        ] as const) {
          f.gh.close(n);
          const issue = { ...f.gh.issueJson(f.gh.issues.get(n) as StoredIssue), labels };
          const answer = await deliver(
            served.url,
            'issues',
            JSON.stringify({ action: 'closed', issue, repository }),
          );
          assert.equal(answer.status, 200, `labels ${String(labels)}`);
          assert.deepEqual(((await answer.json()) as { applied: string[] }).applied, ['closed']);
        }
      } finally {
        await served.close();
        await f.close();
      }
    });

    test("GitHub's default form encoding is taken, signed over the body as sent", async () => {
      const f = await githubFixture(db);
      const app = new Hono();
      app.route('/', githubWebhookRoutes({ ...f.backlog.deps, repo: parseRepo(REPO), secret: SECRET }));
      const served = await listen(app);
      try {
        f.gh.add(4);
        await f.backlog.sync({ labels: [] });
        const { job } = await f.store.jobs.enqueue({ key: key(4) });
        f.gh.close(4);
        const json = JSON.stringify({
          action: 'closed',
          issue: f.gh.issueJson(f.gh.issues.get(4) as StoredIssue),
          repository,
        });
        const form = new URLSearchParams({ payload: json }).toString();
        const unsigned = await deliver(served.url, 'issues', form, { type: FORM, signed: json });
        assert.equal(unsigned.status, 401, 'signed over the JSON, not the body sent: refused');
        const bad: readonly (readonly [string, RegExp])[] = [
          ['zen=hi', /^the form body has no payload field$/],
          ['payload=%7Bnot', /^the payload field is not JSON/],
        ];
        for (const [text, message] of bad) {
          const answer = await deliver(served.url, 'issues', text, { type: FORM });
          assert.equal(answer.status, 400, text);
          assert.match(((await answer.json()) as Refusal).error.message, message);
        }
        const notJson = await deliver(served.url, 'issues', form);
        assert.equal(notJson.status, 400, 'a form body sent as application/json');
        const refused = (await notJson.json()) as Refusal;
        assert.match(refused.error.message, /^the body is not JSON/);
        assert.match(refused.error.hint ?? '', /application\/json.*application\/x-www-form-urlencoded/);
        assert.equal((await f.store.jobs.get(job.id))?.status, 'queued', 'nothing changed so far');
        const signed = await deliver(served.url, 'issues', form, { type: `${FORM}; charset=utf-8` });
        assert.equal(signed.status, 200);
        assert.deepEqual(((await signed.json()) as { applied: string[] }).applied, ['closed']);
        assert.equal((await f.store.jobs.get(job.id))?.status, 'cancelled');
      } finally {
        await served.close();
        await f.close();
      }
    });

    test('the task:added rows of the sync and the webhook name who added the task, as their other rows do', async () => {
      const f = await githubFixture(db);
      const app = new Hono();
      app.route('/', githubWebhookRoutes({ ...f.backlog.deps, repo: parseRepo(REPO), secret: SECRET }));
      const served = await listen(app);
      try {
        f.gh.add(1, { labels: ['needs-design-review'] });
        await f.backlog.sync({ labels: [] });
        f.gh.add(2);
        const issue = f.gh.issueJson(f.gh.issues.get(2) as StoredIssue);
        const opened = await deliver(
          served.url,
          'issues',
          JSON.stringify({ action: 'opened', issue, repository }),
        );
        assert.equal(opened.status, 200);
        for (const n of [1, 2]) {
          const [added] = await f.store.audit.list({ key: key(n), type: 'task:added' });
          assert.equal(added?.detail['by'], 'github sync', `#${n}: ${JSON.stringify(added)}`);
        }
        const [gated] = await f.store.audit.list({ key: key(1), type: 'task:gated' });
        assert.equal(gated?.detail['by'], 'github sync', 'as the gate row of the same code');
      } finally {
        await served.close();
        await f.close();
      }
    });

    test('an API answer of the wrong shape is "GitHub unavailable": no 500, nothing added, the cursor kept', async () => {
      const f = await githubFixture(db);
      const answers = new Map<string, unknown>();
      const fake = createServer((req, res) => {
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        const body = answers.get(path);
        res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body ?? { message: 'Not Found' }));
      });
      await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
      const address = fake.address();
      const apiUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
      const logs: string[] = [];
      const env = { ...f.env, GITHUB_API_URL: apiUrl };
      const backlog = openBacklog({
        store: f.store,
        repo: parseRepo(REPO),
        env,
        log: (line) => logs.push(line),
      });
      const app = new Hono();
      app.route('/', backlog.webhook(SECRET));
      const served = await listen(app);
      try {
        const list = `/repos/${REPO}/issues`;
        const pages: readonly (readonly [unknown, RegExp])[] = [
          [
            { message: 'moved' },
            /issues: an answer Baton cannot read \(expected a list of issues, got an object\)$/,
          ],
          [
            [rawIssue(1), rawIssue(2, { number: '2/labels' })],
            /issues: .*1\.number: must be a positive integer/,
          ],
          [[rawIssue(3, { labels: null })], /issues: .*0\.labels: expected array, got null/],
          [[rawIssue(4, { labels: [5] })], /issues: .*0\.labels\.0: expected a label/],
          [[null], /issues: .*0: expected object, got null/],
        ];
        for (const [page, message] of pages) {
          answers.set(list, page);
          const failed = await backlog.sync({ labels: [] }).then(
            () => null,
            (error: unknown) => error,
          );
          assert.ok(failed instanceof GithubUnavailableError, `${JSON.stringify(page)}: ${String(failed)}`);
          assert.match(failed.message, message);
          assert.match(failed.message, /^GitHub GET \/repos\/acme\/api\/issues/);
        }
        assert.deepEqual(await f.store.tasks.list(), [], "nothing added, not even the page's good issue");
        assert.equal(await f.store.github.cursor(REPO), null, 'the cursor did not move');
        // A single read: the re-check runs the job unchecked, a delivery gets 503 naming the field.
        answers.set(`${list}/5`, rawIssue(5, { title: null }));
        await f.store.tasks.add({ key: key(5), title: 'five' });
        const { job } = await f.store.jobs.enqueue({ key: key(5) });
        assert.deepEqual(await backlog.recheck(job), { go: true, checked: false });
        assert.match(
          logs.join('\n'),
          /not re-checked on GitHub \(GitHub GET .*\/issues\/5: .*title: expected string/,
        );
        const text = JSON.stringify({ action: 'closed', issue: rawIssue(5), repository });
        const answer = await deliver(served.url, 'issues', text);
        assert.equal(answer.status, 503);
        const refused = (await answer.json()) as Refusal;
        assert.equal(refused.error.code, 'github_unavailable');
        assert.match(refused.error.message, /title: expected string, got null/);
        assert.equal((await f.store.jobs.get(job.id))?.status, 'queued');
      } finally {
        await served.close();
        await new Promise<void>((resolve) => fake.close(() => resolve()));
        await f.close();
      }
    });
  });
}

test('a server with no webhook mounted answers a delivery 404 saying so; its other routes still want a token', async () => {
  const db = bothEngines().find((one) => one.engine === 'sqlite') ?? bothEngines()[0];
  assert.ok(db !== undefined);
  const f = await githubFixture(db);
  const text = JSON.stringify({ action: 'opened', issue: { number: 1 }, repository });
  const noWebhook = async (url: string) => {
    const answer = await deliver(url, 'issues', text);
    assert.equal(answer.status, 404);
    const body = (await answer.json()) as Refusal;
    assert.equal(body.error.code, 'not_found');
    assert.match(body.error.message, /^this server serves no GitHub webhook$/);
    assert.match(body.error.hint ?? '', /--github owner\/repo.*GITHUB_WEBHOOK_SECRET/);
  };
  try {
    const served = await batonServe(f.db, ['serve', '--http', '127.0.0.1:0'], f.env);
    try {
      await noWebhook(served.url);
      const add = await fetch(`${served.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'k1' }),
      });
      assert.equal(add.status, 401, 'a change elsewhere still needs a token');
    } finally {
      await served.stop();
    }
    const required = await serveHttp(meterStore(f.store), {
      bind: parseBind('127.0.0.1:0'),
      auth: 'required',
    });
    try {
      await noWebhook(required.url);
      assert.equal((await fetch(`${required.url}/v1/jobs`)).status, 401, 'reads still want a token');
      const other = await fetch(`${required.url}/v1/github/other`, { method: 'POST' });
      assert.equal(other.status, 401, 'only the webhook path is answered without a token');
    } finally {
      await required.close();
    }
  } finally {
    await f.close();
  }
});
