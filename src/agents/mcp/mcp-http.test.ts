/**
 * `baton mcp` over the HTTP API (issue 17, item 4): the MCP server of an agent that holds only
 * BATON_URL, a token bound to its session and BATON_SESSION, driven by the SDK's own Client
 * against a real `baton serve`. The main flows of mcp-server.test.ts: a race for one task, next,
 * effects and release, escalation and a fenced claim; and the token reaches no other session.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Coordinator } from '../../coordinator/coordinator.js';
import { openStore } from '../../store/open.js';
import type { Store } from '../../store/store.js';
import { bothEngines } from '../../../test/support/databases.js';
import { connect, mcpOver, serve, text } from '../../../test/support/mcp-client.js';
import { mintRunToken } from '../../../test/support/run-token.js';

type Result = Awaited<ReturnType<Client['callTool']>>;
type Structured = Record<string, unknown> & { ok?: boolean; message?: string };
const structured = (r: Result): Structured => (r.structuredContent ?? {}) as Structured;

/** An MCP server for a fresh agent session, reaching Baton only through `url` and its token. */
async function agent(
  store: Store,
  url: string,
  env: Record<string, string> = {},
): Promise<{ client: Client; session: number; token: string }> {
  const s = await store.sessions.start({ kind: 'agent', host: 'box', pid: 1 });
  const made = await new Coordinator(store).tokens.create({ scope: 'agent', session: s.id });
  const client = await mcpOver(url, made.secret, s.id, env);
  return { client, session: s.id, token: made.token.id };
}

for (const db of bothEngines()) {
  describe(`baton mcp over HTTP (${db.name})`, () => {
    test('claims, races, heartbeats, effects, releases, next and escalation work with a URL and a token', async () => {
      const dbUrl = await db.fresh();
      const store = await openStore(dbUrl);
      const server = await serve(dbUrl);
      const clients: Client[] = [];
      try {
        for (const [key, priority] of [
          ['race', 3],
          ['urgent', 1],
          ['esc', 9],
        ] as const) {
          await store.tasks.add({ key, title: key, priority });
        }
        const a = await agent(store, server.url);
        const b = await agent(store, server.url);
        clients.push(a.client, b.client);
        const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
          c.callTool({ name, arguments: args }).then(structured);

        const answers = await Promise.all([
          call(a.client, 'baton_claim', { key: 'race' }),
          call(b.client, 'baton_claim', { key: 'race' }),
        ]);
        const won = answers.filter((r) => r.ok === true);
        const lost = answers.filter((r) => r.ok === false);
        assert.deepEqual([won.length, lost.length], [1, 1]);
        assert.equal(lost[0]?.reason, 'held');
        assert.equal((lost[0]?.holder as { session: number }).session, won[0]?.session);
        const winner = won[0]?.session === a.session ? a.client : b.client;
        const ref = { key: 'race', epoch: won[0]?.epoch as number };
        assert.equal((await call(winner, 'baton_heartbeat', ref)).ok, true);
        const effect = await call(winner, 'baton_effect', {
          ...ref,
          kind: 'pr',
          payload: { url: 'https://x/1' },
        });
        assert.equal(effect.ok, true);
        assert.deepEqual(
          (await store.effects.list({ key: 'race' })).map((e) => e.payload),
          [{ url: 'https://x/1' }],
        );
        assert.equal((await call(winner, 'baton_release', { ...ref, outcome: 'done' })).ok, true);
        assert.equal((await store.tasks.get('race'))?.state, 'done');
        const twice = await call(winner, 'baton_release', { ...ref, outcome: 'done' });
        assert.equal(twice.ok, false);

        const next = await call(a.client, 'baton_next');
        assert.deepEqual([next.ok, next.key, next.epoch], [true, 'urgent', 1]);
        const shown = await call(b.client, 'baton_show_task', { key: 'urgent' });
        assert.equal(JSON.stringify(shown).includes(`${a.session}`), true, 'the holder is shown');

        const claimed = await call(b.client, 'baton_claim', { key: 'esc' });
        const escRef = { key: 'esc', epoch: claimed.epoch as number, reason: 'which provider?' };
        assert.equal((await call(b.client, 'baton_escalate', escRef)).ok, true);
        assert.equal((await store.tasks.get('esc'))?.state, 'escalated');
        const again = await call(b.client, 'baton_escalate', escRef);
        assert.deepEqual([again.ok, again.reason], [false, 'fenced']);
        const none = await call(b.client, 'baton_next');
        assert.equal(none.ok, false);

        const progress = await store.progress.get(a.session);
        assert.ok((progress?.toolCalls ?? 0) >= 1, 'tool calls are progress marks over HTTP too');
        const refused = await store.audit.list({ type: 'auth:refused' });
        assert.deepEqual(refused, [], 'each agent stayed within its own session');
      } finally {
        await Promise.all(clients.map((c) => c.close()));
        server.child.kill('SIGTERM');
        await store.close();
      }
    });

    test("a run's token releasing its claim done, BATON_KEY unset: the server keeps it, the tool says so", async () => {
      // `baton mcp` knows the run's claim from BATON_KEY and BATON_EPOCH; an MCP client that passes
      // its server BATON_SESSION and the token alone leaves it to the server (http/claims.ts).
      const dbUrl = await db.fresh();
      const store = await openStore(dbUrl);
      const server = await serve(dbUrl);
      const { agent: a, claim, made } = await mintRunToken(store, 'run');
      const client = await mcpOver(server.url, made.secret, a.id);
      const call = (name: string, args: Record<string, unknown>) =>
        client.callTool({ name, arguments: args }).then(structured);
      try {
        const ref = { key: 'run', epoch: claim.epoch };
        const done = await call('baton_release', { ...ref, outcome: 'done' });
        assert.equal(done.ok, true, JSON.stringify(done));
        assert.match(done.message ?? '', /^Nothing released: Baton's runner holds run for this run and /);
        assert.equal(done['released'], false, 'the answer says so in its fields too');
        assert.deepEqual(
          [(await store.claims.current('run'))?.epoch, (await store.tasks.get('run'))?.state],
          [claim.epoch, 'open'],
          "the claim stays the run's, the task not done",
        );
        assert.equal((await call('baton_heartbeat', ref)).ok, true, 'the model still holds it');
        const failed = await call('baton_release', { ...ref, outcome: 'failed' });
        assert.match(failed.message ?? '', /^Released run \(failed\)\. You no longer hold it\./);
        assert.equal(failed['released'], true);
        assert.equal(await store.claims.current('run'), null);
      } finally {
        await client.close();
        server.child.kill('SIGTERM');
        await store.close();
      }
    });

    test('a key that is not text (a lone surrogate) is refused as in database mode, not "URI malformed"', async () => {
      const dbUrl = await db.fresh();
      const store = await openStore(dbUrl);
      const server = await serve(dbUrl);
      const a = await agent(store, server.url);
      const direct = await connect(dbUrl, { BATON_SESSION: String(a.session) });
      try {
        const key = 'a\ud800b';
        for (const [name, args] of [
          ['baton_claim', { key }],
          ['baton_show_task', { key }],
          ['baton_heartbeat', { key, epoch: 1 }],
          ['baton_release', { key, epoch: 1, outcome: 'done' }],
          ['baton_escalate', { key, epoch: 1, reason: 'why' }],
        ] as const) {
          const [over, here] = await Promise.all(
            [a.client, direct].map((c) => c.callTool({ name, arguments: args })),
          );
          assert.ok(over !== undefined && here !== undefined);
          assert.match(text(here), /^task key /, `${name} in database mode: ${JSON.stringify(here)}`);
          assert.equal(text(over), text(here), `${name} over HTTP`);
          assert.deepEqual([over.isError, here.isError], [true, true], name);
        }
      } finally {
        await Promise.all([a.client.close(), direct.close()]);
        server.child.kill('SIGTERM');
        await store.close();
      }
    });

    test('an MCP config that names BATON_DB does not take an agent holding BATON_URL past its token', async () => {
      // `baton mcp --print-config` writes BATON_DB into the client's config, and Claude Code starts
      // the server with it over the environment a runner gave its agent (BATON_URL, a run's token).
      const dbUrl = await db.fresh();
      const store = await openStore(dbUrl);
      const server = await serve(dbUrl);
      const a = await agent(store, server.url, { BATON_DB: dbUrl });
      try {
        await store.tasks.add({ key: 'both', title: 'both named' });
        const claimed = structured(
          await a.client.callTool({ name: 'baton_claim', arguments: { key: 'both' } }),
        );
        assert.equal(claimed.ok, true, JSON.stringify(claimed));
        const granted = (await store.audit.list({ key: 'both' })).filter((e) => e.type === 'claim:granted');
        assert.deepEqual(
          granted.map((e) => [e.session, e.token]),
          [[a.session, a.token]],
          'the claim went through the API under the agent token, not straight to the database',
        );
      } finally {
        await a.client.close();
        server.child.kill('SIGTERM');
        await store.close();
      }
    });
  });
}
