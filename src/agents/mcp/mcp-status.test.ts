/**
 * baton_status after a context reset: the session's live claims come from the store, whichever
 * process made them (`baton claim`, an MCP server before a restart), with their epoch, since and
 * heartbeat; a claim this server made and lost is shown gone; another session's claims are not
 * shown. Over HTTP the same, and a BATON_SESSION that is not its token's session is said in one line.
 * Driven by the MCP SDK's own Client against real `baton mcp` and `baton serve` processes.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Coordinator } from '../../coordinator/coordinator.js';
import { openStore } from '../../store/open.js';
import { bothEngines } from '../../../test/support/databases.js';
import { baton } from '../../../test/support/cli.js';
import { connect, mcpOver, serve, structured, withBaton } from '../../../test/support/mcp-client.js';

interface Shown {
  readonly key: string;
  readonly epoch: number;
  readonly current: boolean;
  readonly since?: string;
  readonly heartbeatAt?: string;
  readonly holder: { readonly session: number } | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

for (const db of bothEngines()) {
  describe(`baton_status lists the session's claims from the store (${db.name})`, () => {
    test('a claim made by the CLI and one by an earlier MCP process are listed; a lost one is gone', () =>
      withBaton(db, async (url, store) => {
        for (const key of ['cli', 'first', 'lost', 'other']) await store.tasks.add({ key, title: key });
        const s = await store.sessions.start({ kind: 'agent', host: 'box', pid: 1, ttlMs: 3_600_000 });
        const stranger = await store.sessions.start({ kind: 'agent', host: 'elsewhere', pid: 2 });
        assert.ok((await store.claims.acquire({ key: 'other', session: stranger.id })).ok);
        const cli = await baton(url, 'claim', 'cli', '--session', String(s.id));
        assert.equal(cli.code, 0, cli.stderr);
        const env = { BATON_SESSION: String(s.id) };
        const first = await connect(url, env);
        const took = structured(await first.callTool({ name: 'baton_claim', arguments: { key: 'first' } }));
        assert.equal(took.ok, true, JSON.stringify(took));
        await first.close();

        const second = await connect(url, env);
        try {
          const lost = structured(await second.callTool({ name: 'baton_claim', arguments: { key: 'lost' } }));
          assert.equal(lost.ok, true, JSON.stringify(lost));
          const by = { name: 'ops' };
          assert.ok((await store.claims.forceRelease({ key: 'lost', reason: 'taken back', by })).ok);
          const status = structured(await second.callTool({ name: 'baton_status', arguments: {} }));
          const claims = status.claims as Shown[];
          const live = await store.observe.liveClaims();
          const stored = (key: string) => live.find((claim) => claim.key === key);
          assert.deepEqual(
            claims.map((claim) => [claim.key, claim.epoch, claim.current, claim.holder?.session ?? null]),
            [
              ['cli', 1, true, s.id],
              ['first', 1, true, s.id],
              ['lost', 1, false, null],
            ],
            JSON.stringify(status),
          );
          for (const claim of claims.filter((shown) => shown.current)) {
            const row = stored(claim.key);
            assert.ok(row !== undefined);
            assert.deepEqual([claim.since, claim.heartbeatAt], [iso(row.claimedAt), iso(row.heartbeatAt)]);
          }
          assert.equal(
            status.message,
            `Session ${s.id} is live, but these claims are no longer yours: lost (epoch 1). Stop working on them.`,
          );
          assert.equal(stored('other')?.session, stranger.id, "another session's claim is there, not shown");
        } finally {
          await second.close();
        }
        const again = await connect(url, env);
        try {
          const status = structured(await again.callTool({ name: 'baton_status', arguments: {} }));
          assert.equal(
            status.message,
            `Session ${s.id} is live; you hold 2 claims: cli at epoch 1, first at epoch 1.`,
          );
        } finally {
          await again.close();
        }
      }));

    test('over HTTP the same; a BATON_SESSION that is not its token’s session is said in one line', async () => {
      const dbUrl = await db.fresh();
      const store = await openStore(dbUrl);
      const server = await serve(dbUrl);
      try {
        await store.tasks.add({ key: 'held', title: 'held' });
        const mine = await store.sessions.start({ kind: 'agent', host: 'box', pid: 1 });
        const other = await store.sessions.start({ kind: 'agent', host: 'box', pid: 2 });
        assert.ok((await store.claims.acquire({ key: 'held', session: mine.id })).ok);
        const tokens = new Coordinator(store).tokens;
        const own = await tokens.create({ scope: 'agent', session: mine.id });
        const wrong = await tokens.create({ scope: 'agent', session: other.id });

        const right = await mcpOver(server.url, own.secret, mine.id);
        try {
          const status = structured(await right.callTool({ name: 'baton_status', arguments: {} }));
          const claims = status.claims as Shown[];
          assert.deepEqual(
            claims.map((claim) => [claim.key, claim.epoch, claim.current]),
            [['held', 1, true]],
          );
          assert.equal(status.tokenSession, undefined);
        } finally {
          await right.close();
        }

        const before = (await store.audit.list({})).length;
        const crossed = await mcpOver(server.url, wrong.secret, mine.id);
        try {
          const status = structured(await crossed.callTool({ name: 'baton_status', arguments: {} }));
          assert.deepEqual([status.session, status.tokenSession, status.claims], [mine.id, other.id, []]);
          assert.equal(
            status.message,
            `BATON_SESSION names session ${mine.id}, but BATON_TOKEN is bound to session ${other.id}: ` +
              'Baton refuses every change you make. Stop, and tell the user to give you the two of one session.',
          );
        } finally {
          await crossed.close();
        }
        assert.equal((await store.audit.list({})).length, before, 'the status changed nothing');

        const unknown = await fetch(`${server.url}/v1/sessions/999/claims`);
        assert.equal(unknown.status, 404);
      } finally {
        server.child.kill('SIGTERM');
        await store.close();
      }
    });
  });
}
