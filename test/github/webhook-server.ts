/** The webhook routes mounted on a bare Hono app served by @hono/node-server, for the tests. */
import assert from 'node:assert/strict';
import { serve } from '@hono/node-server';
import { Webhooks } from '@octokit/webhooks';
import { Hono } from 'hono';
import { parseRepo } from '../../src/core/github.js';
import { openBacklog } from '../../src/github/backlog.js';
import { githubFixture, REPO, type GithubFixture } from './fixture.js';

export const SECRET = 'whsec-stand-in-0123456789';

export async function withServer(
  db: Parameters<typeof githubFixture>[0],
  body: (
    f: GithubFixture,
    post: (event: string, payload: unknown, sign?: string | null) => Promise<Response>,
  ) => Promise<void>,
  importLabels: readonly string[] = [],
  /** The repository as `baton up --github` was given it. */
  repo = REPO,
): Promise<void> {
  const f = await githubFixture(db);
  const app = new Hono();
  // The routes as `baton up --github` mounts them: the backlog's, with its own client (no waits).
  const backlog =
    repo === REPO
      ? f.backlog
      : openBacklog({ store: f.store, repo: parseRepo(repo), env: f.env, log: (l) => f.logs.push(l) });
  app.route('/', backlog.webhook(SECRET, importLabels));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  const post = async (event: string, payload: unknown, sign: string | null = SECRET) => {
    const text = JSON.stringify(payload);
    const signature = sign === null ? null : await new Webhooks({ secret: sign }).sign(text);
    return fetch(`${base}/v1/github/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': '1',
        ...(signature === null ? {} : { 'x-hub-signature-256': signature }),
      },
      body: text,
    });
  };
  try {
    await body(f, post);
    assert.deepEqual(f.checker.failures, []);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await f.close();
  }
}

export const repository = { full_name: REPO, name: 'api', owner: { login: 'acme' } };
