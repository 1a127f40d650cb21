/**
 * An agent's token claims only work Baton would hand out (docs/decisions/0059): a task behind a
 * design gate, or waiting for a task not done, is refused `task_gated` / `task_blocked` (409, the
 * CLI's exit 3), by the short way and by Hono alike, over MCP too, and nothing changes; a person
 * (an operator's token, `baton claim` on the database) still claims it by hand. A real `baton serve`
 * on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { baton, repoRoot, type Run } from '../support/cli.js';
import { bothEngines, sqliteDatabase } from '../support/databases.js';
import { connect, structured, text } from '../support/mcp-client.js';
import { call, serve, type Answer } from './support.js';

/** A claim by Hono's route, not the short way: a Content-Type with a charset is not plainly one. */
async function claimByHono(url: string, key: string, token: string, session: number): Promise<Answer> {
  const response = await fetch(`${url}/v1/claims/${key}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({ session }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

type ErrorBody = { code: string; message: string; hint: string; details: Record<string, unknown> };
const errorOf = (answer: Answer): ErrorBody => answer.body['error'] as ErrorBody;

/** risky behind the design gate, blocked waiting for dep (open), free open. */
async function backlog(store: Store): Promise<void> {
  await store.tasks.add({ key: 'risky', title: 'needs a design' });
  await store.lifecycle.gate({ key: 'risky', gate: 'design', by: { name: 'test' } });
  await store.tasks.add({ key: 'dep' });
  await store.tasks.add({ key: 'blocked' });
  await store.lifecycle.depend({ key: 'blocked', on: 'dep', by: { name: 'test' } });
  await store.tasks.add({ key: 'free' });
}

async function agentToken(store: Store): Promise<{ session: number; secret: string }> {
  const session = (await store.sessions.start({ kind: 'agent', host: 'box', pid: 1, ttlMs: 3_600_000 })).id;
  const { secret } = await store.tokens.create({ scope: 'agent', session });
  return { session, secret };
}

for (const db of bothEngines()) {
  describe(`an agent's token and the gates (${db.name})`, () => {
    test('refuses a gated or blocked claim both ways, changing nothing; a person, a handed-out task pass', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        await backlog(store);
        const agent = await agentToken(store);
        const claim = (key: string) =>
          call(server.url, 'POST', `/v1/claims/${key}`, {
            token: agent.secret,
            body: { session: agent.session },
          });

        for (const ask of [
          claim,
          (key: string) => claimByHono(server.url, key, agent.secret, agent.session),
        ]) {
          const gated = await ask('risky');
          assert.equal(gated.status, 409, JSON.stringify(gated.body));
          assert.equal(errorOf(gated).code, 'task_gated');
          assert.equal(
            errorOf(gated).message,
            "task risky is waiting for design approval: an agent's token may not claim it until a person approves",
          );
          assert.match(errorOf(gated).hint, /`baton approve risky --gate design`/);
          const blocked = await ask('blocked');
          assert.equal(blocked.status, 409, JSON.stringify(blocked.body));
          assert.equal(errorOf(blocked).code, 'task_blocked');
          assert.equal(
            errorOf(blocked).message,
            "task blocked waits for task dep (open): an agent's token may not claim it until that task is done",
          );
          assert.match(errorOf(blocked).hint, /`baton task undepend blocked --on dep`/);
          assert.deepEqual(errorOf(blocked).details['waitsFor'], [{ key: 'dep', state: 'open' }]);
        }
        for (const key of ['risky', 'blocked']) {
          assert.equal(await store.claims.current(key), null, `no claim on ${key}`);
          assert.equal((await store.tasks.get(key))?.epoch, 0, `no epoch spent on ${key}`);
        }

        // A handed-out task is claimed as ever; so is the gated one once a person approved it.
        assert.equal((await claim('free')).status, 200);
        await store.lifecycle.approveGate({ key: 'risky', gate: 'design', by: { name: 'test' } });
        const approved = await claim('risky');
        assert.equal(approved.status, 200, JSON.stringify(approved.body));
        assert.equal(approved.body['epoch'], 1);

        // A person claims a gated task by hand: an operator's token (decisions 0010, 0035).
        const { secret: operator } = await store.tokens.create({ scope: 'operator', name: 'person' });
        const person = (await store.sessions.start({ kind: 'human', host: 'desk', pid: 2 })).id;
        const byHand = await call(server.url, 'POST', '/v1/claims/blocked', {
          token: operator,
          body: { session: person },
        });
        assert.equal(byHand.status, 200, JSON.stringify(byHand.body));
      } finally {
        await server.stop();
        await store.close();
      }
    });

    test('a gate after the claim keeps it: claimed again as the same claim, released done (0059)', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        await store.tasks.add({ key: 'late' });
        await store.tasks.add({ key: 'later-dep' });
        const agent = await agentToken(store);
        const body = { session: agent.session };
        const first = await call(server.url, 'POST', '/v1/claims/late', { token: agent.secret, body });
        assert.equal(first.status, 200);
        await store.lifecycle.gate({ key: 'late', gate: 'design', by: { name: 'test' } });
        await store.lifecycle.depend({ key: 'late', on: 'later-dep', by: { name: 'test' } });
        const again = await call(server.url, 'POST', '/v1/claims/late', { token: agent.secret, body });
        assert.equal(again.status, 200, JSON.stringify(again.body));
        assert.equal(again.body['granted'], false);
        assert.equal(again.body['epoch'], 1);
        const done = await call(server.url, 'POST', '/v1/claims/late/release', {
          token: agent.secret,
          body: { session: agent.session, epoch: 1, outcome: 'done' },
        });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.equal((await store.tasks.get('late'))?.state, 'done');
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}

/** `baton …` with only BATON_URL and BATON_TOKEN: the CLI over the API, as an agent runs it. */
function overApi(url: string, token: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '', BATON_URL: url, BATON_TOKEN: token };
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['bin/baton.js', ...args],
      { cwd: repoRoot(), env },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

describe("an agent's token and the gates, through the CLI and MCP (SQLite)", () => {
  test('baton claim over the API exits 3 with one line, baton mcp says why; on the database it passes', async () => {
    const db = sqliteDatabase();
    const url = await db.fresh();
    const store = await openStore(url);
    const server = await serve(url);
    try {
      await backlog(store);
      const agent = await agentToken(store);
      const cli = await overApi(
        server.url,
        agent.secret,
        'claim',
        'risky',
        '--session',
        String(agent.session),
      );
      assert.equal(cli.code, 3, cli.stderr);
      assert.equal(
        cli.stderr.trim(),
        "baton: task risky is waiting for design approval: an agent's token may not claim it until a person " +
          'approves — a person approves it with `baton approve risky --gate design`; pick another task meanwhile ' +
          '(`baton next` hands out only what may be worked)',
      );
      const json = await overApi(
        server.url,
        agent.secret,
        'claim',
        'blocked',
        '--session',
        String(agent.session),
        '--json',
      );
      assert.equal(json.code, 3);
      assert.equal((JSON.parse(json.stdout) as { error: string }).error, 'task_blocked');

      const client = await connect(url, {
        BATON_URL: server.url,
        BATON_TOKEN: agent.secret,
        BATON_SESSION: String(agent.session),
      });
      try {
        const refused = await client.callTool({ name: 'baton_claim', arguments: { key: 'risky' } });
        assert.equal(refused.isError, true);
        assert.match(text(refused), /^task risky is waiting for design approval: .* — a person approves it/);
        const release = structured(
          await client.callTool({
            name: 'baton_release',
            arguments: { key: 'risky', epoch: 1, outcome: 'done' },
          }),
        );
        assert.equal(release.ok, false, 'nothing to release');
      } finally {
        await client.close();
      }
      assert.equal((await store.tasks.get('risky'))?.state, 'open');
      assert.equal(await store.claims.current('risky'), null);

      // A person on the database claims it by hand, as decisions 0010 and 0035 keep.
      const session = (await store.sessions.start({ kind: 'human', host: 'desk', pid: 3, ttlMs: 3_600_000 }))
        .id;
      const byHand = await baton(url, 'claim', 'risky', '--session', String(session));
      assert.equal(byHand.code, 0, byHand.stderr);
    } finally {
      await server.stop();
      await store.close();
    }
  });
});
