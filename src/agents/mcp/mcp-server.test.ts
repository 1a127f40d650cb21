/**
 * `baton mcp` driven by the MCP SDK's own Client over a stdio transport, against a real database:
 * the tools and their schemas, a race for one task, bad arguments, and the session's life (a claim
 * fenced off under the client: mcp-fenced.test.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { bothEngines, sqliteDatabase } from '../../../test/support/databases.js';
import { baton } from '../../../test/support/cli.js';
import { waitUntil } from '../../../test/support/wait.js';
import { BIN, connect, structured, text, withBaton } from '../../../test/support/mcp-client.js';

describe('baton mcp', () => {
  test('lists its tools, each described for a model, with input and output schemas that compile', () =>
    withBaton(sqliteDatabase(), async (db) => {
      const client = await connect(db);
      try {
        const { tools } = await client.listTools();
        const names = tools.map((t) => t.name).sort();
        assert.deepEqual(names, [
          'baton_claim',
          'baton_effect',
          'baton_escalate',
          'baton_heartbeat',
          'baton_next',
          'baton_release',
          'baton_show_task',
          'baton_status',
        ]);
        const ajv = new AjvJsonSchemaValidator();
        for (const tool of tools) {
          assert.ok((tool.description ?? '').length > 100, `${tool.name} says when to call it`);
          assert.equal(tool.inputSchema.type, 'object');
          assert.equal(tool.outputSchema?.type, 'object', `${tool.name} has an output schema`);
          assert.doesNotThrow(() => ajv.getValidator(tool.inputSchema as object));
          assert.doesNotThrow(() => ajv.getValidator(tool.outputSchema as object));
        }
        const claim = tools.find((t) => t.name === 'baton_claim');
        assert.deepEqual(claim?.inputSchema.required, ['key']);
        const check = ajv.getValidator(claim?.inputSchema as object);
        assert.equal(check({ key: 'github:acme/api#1' }).valid, true);
        assert.equal(check({}).valid, false);
        const heartbeat = tools.find((t) => t.name === 'baton_heartbeat');
        assert.deepEqual([...(heartbeat?.inputSchema.required ?? [])].sort(), ['epoch', 'key']);
        const instructions = client.getInstructions() ?? '';
        assert.match(instructions, /baton_claim/);
      } finally {
        await client.close();
      }
    }));

  for (const db of bothEngines()) {
    test(`two clients race for one task: exactly one gets it, the other is told the holder (${db.name})`, () =>
      withBaton(db, async (url, store) => {
        await store.tasks.add({ key: 'github:acme/api#7', title: 'race' });
        const [a, b] = await Promise.all([connect(url), connect(url)]);
        try {
          const results = await Promise.all(
            [a, b].map((c) => c.callTool({ name: 'baton_claim', arguments: { key: 'github:acme/api#7' } })),
          );
          const answers = results.map(structured);
          const won = answers.filter((r) => r.ok === true);
          const lost = answers.filter((r) => r.ok === false);
          assert.equal(won.length, 1);
          assert.equal(lost.length, 1);
          assert.equal(won[0]?.epoch, 1);
          const holder = lost[0]?.holder as { session: number; host: string; epoch: number };
          assert.equal(lost[0]?.reason, 'held');
          assert.equal(holder.session, won[0]?.session);
          assert.equal(holder.epoch, 1);
          assert.match(
            lost[0]?.message ?? '',
            new RegExp(`held by session ${holder.session} on ${holder.host}`),
          );
          assert.match(lost[0]?.message ?? '', /Stop: do not work on/);
          const loser = results[answers.findIndex((r) => r.ok === false)];
          assert.ok(loser !== undefined);
          assert.equal(loser.isError, undefined, 'held is a result, not an error');
          assert.equal(text(loser), lost[0]?.message);
          assert.equal((await store.claims.history('github:acme/api#7')).length, 1);
        } finally {
          await Promise.all([a.close(), b.close()]);
        }
      }));
  }

  for (const db of bothEngines()) {
    test(`baton_next takes the most urgent free task, skips gated ones, and says when none is left (${db.name})`, () =>
      withBaton(db, async (url, store) => {
        // Lower priority numbers run first.
        await store.tasks.add({ key: 'later', title: 'later', priority: 5 });
        await store.tasks.add({ key: 'urgent', title: 'urgent', priority: 1 });
        await store.tasks.add({ key: 'gated', title: 'gated', priority: 0 });
        await store.lifecycle.gate({ key: 'gated', gate: 'design', by: { name: 'test' } });
        const [a, b] = await Promise.all([connect(url), connect(url)]);
        try {
          const first = structured(await a.callTool({ name: 'baton_next', arguments: {} }));
          assert.equal(first.ok, true);
          assert.equal(first.key, 'urgent');
          assert.equal(first.epoch, 1);
          // The claim is the real one: another client is told who holds it.
          const held = structured(await b.callTool({ name: 'baton_claim', arguments: { key: 'urgent' } }));
          assert.equal(held.ok, false);
          assert.equal((held.holder as { session: number }).session, first.session);
          const second = structured(await b.callTool({ name: 'baton_next', arguments: {} }));
          assert.equal(second.key, 'later');
          const none = structured(await a.callTool({ name: 'baton_next', arguments: {} }));
          assert.equal(none.ok, false);
          assert.equal(none.key, null);
          assert.deepEqual(none.gated, [{ key: 'gated', gate: 'design' }]);
          assert.match(none.message ?? '', /No task is free.*gated.*Stop, and tell the user/);
          const status = structured(await a.callTool({ name: 'baton_status', arguments: {} }));
          assert.deepEqual(
            (status.claims as { key: string; current: boolean }[]).map((c) => [c.key, c.current]),
            [['urgent', true]],
          );
          const bad = await a.callTool({ name: 'baton_next', arguments: { label: '' } });
          assert.equal(bad.isError, true);
          assert.match(text(bad), /label must not be empty/);
        } finally {
          await Promise.all([a.close(), b.close()]);
        }
      }));

    test(`baton_escalate hands the task to a human and ends the claim; a fenced one is told to stop (${db.name})`, () =>
      withBaton(db, async (url, store) => {
        await store.tasks.add({ key: 'esc', title: 'needs a human' });
        const client = await connect(url);
        try {
          const claimed = structured(
            await client.callTool({ name: 'baton_claim', arguments: { key: 'esc' } }),
          );
          const ref = { key: 'esc', epoch: claimed.epoch as number };
          const bad = await client.callTool({ name: 'baton_escalate', arguments: ref });
          assert.equal(bad.isError, true);
          assert.match(text(bad), /reason is required/);
          assert.equal((await store.tasks.get('esc'))?.state, 'open', 'a bad call changes nothing');
          const reason = 'Which OAuth provider: the issue names two.';
          const done = structured(
            await client.callTool({ name: 'baton_escalate', arguments: { ...ref, reason } }),
          );
          assert.equal(done.ok, true);
          assert.match(done.message ?? '', /stop working on this task/);
          const task = await store.tasks.get('esc');
          assert.equal(task?.state, 'escalated');
          assert.equal(task?.stateReason, reason);
          const history = await store.claims.history('esc');
          assert.equal(history[0]?.outcome, 'escalated');
          const again = structured(
            await client.callTool({ name: 'baton_escalate', arguments: { ...ref, reason } }),
          );
          assert.equal(again.ok, false);
          assert.equal(again.reason, 'fenced');
          assert.match(again.message ?? '', /Stop working on esc now/);
          const escalated = await store.audit.list({ key: 'esc', type: 'task:state' });
          assert.ok(escalated.some((e) => e.detail['to'] === 'escalated'));
        } finally {
          await client.close();
        }
      }));
  }

  test('bad arguments and unknown tasks are tool errors carrying the hint; nothing changes', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      const client = await connect(db);
      try {
        const cases: [string, Record<string, unknown>, RegExp][] = [
          ['baton_claim', {}, /key is required: the task key/],
          ['baton_claim', { key: '' }, /key must not be empty/],
          ['baton_heartbeat', { key: 't' }, /epoch is required: the number baton_claim returned/],
          [
            'baton_heartbeat',
            { key: 't', epoch: 'one' },
            /epoch must be a JSON number, not "one": the one baton_claim returned/,
          ],
          [
            'baton_heartbeat',
            { key: 't', epoch: '2' },
            /epoch must be a JSON number, not "2": .*\(2, not "2"\)/,
          ],
          ['baton_claim', { key: 12 }, /key must be a string, not 12: the task key/],
          ['baton_heartbeat', { key: 't', epoch: 0 }, /epoch is 1 or more/],
          ['baton_release', { key: 't', epoch: 1, outcome: 'finished' }, /outcome must be done/],
          ['baton_claim', { key: 'nope' }, /task nope not found — add it with `baton task add`/],
          ['baton_show_task', { key: 'nope' }, /task nope not found — add it/],
        ];
        for (const [name, args, expected] of cases) {
          const r = await client.callTool({ name, arguments: args });
          assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}`);
          assert.match(text(r), expected);
        }
        assert.equal((await store.audit.list({ type: 'claim:granted' })).length, 0);
      } finally {
        await client.close();
      }
    }));

  test('refuses an argument a tool does not take, naming it and the ones it takes; nothing changes', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 't', title: 'strict' });
      const client = await connect(db);
      try {
        const claimed = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 't' } }));
        const ref = { key: 't', epoch: claimed.epoch as number };
        const cases: [string, Record<string, unknown>, RegExp][] = [
          [
            'baton_release',
            { ...ref, outcome: 'done', exitCod: 1 },
            /unknown argument "exitCod": leave it out or correct its name; this tool takes key, epoch, outcome$/,
          ],
          [
            'baton_effect',
            { ...ref, kind: 'pr', url: 'https://x/pr/1' },
            /"url".*takes key, epoch, kind, payload/,
          ],
          ['baton_heartbeat', { key: 't', epok: 1 }, /unknown argument "epok".*takes key, epoch/],
          ['baton_status', { verbose: true }, /unknown argument "verbose".*this tool takes no arguments/],
          [
            'baton_next',
            { labels: 'bug', projct: 'api' },
            /unknown arguments "labels", "projct": leave them out or correct their names; .*takes label, project/,
          ],
          ['baton_escalate', { ...ref, reason: 'why', urgent: true }, /unknown argument "urgent"/],
          ['baton_show_task', { key: 't', full: 1 }, /unknown argument "full".*takes key$/],
          ['baton_claim', { key: 't', force: true }, /unknown argument "force".*takes key$/],
        ];
        for (const [name, args, expected] of cases) {
          const r = await client.callTool({ name, arguments: args });
          assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}`);
          assert.match(text(r), expected);
        }
        const pr = { ...ref, kind: 'pr', payload: { url: 'javascript:alert(1)' } };
        const script = await client.callTool({ name: 'baton_effect', arguments: pr });
        assert.equal(script.isError, true, 'a pr url that is not http(s) is refused too');
        assert.match(text(script), /the pr effect's url "javascript:alert\(1\)" is not an http\(s\) address/);
        assert.equal(
          (await store.tasks.get('t'))?.holder?.session,
          claimed.session,
          'still held: no release',
        );
        assert.deepEqual(await store.effects.list({ key: 't' }), [], 'no effect recorded');
        const released = structured(
          await client.callTool({ name: 'baton_release', arguments: { ...ref, outcome: 'done' } }),
        );
        assert.equal(released.ok, true, 'the same call without the stray argument goes through');
        const { tools } = await client.listTools();
        for (const tool of tools)
          assert.equal(tool.inputSchema['additionalProperties'], false, `${tool.name} says it is strict`);
      } finally {
        await client.close();
      }
    }));

  test('starts its session on first use, records effects and releases, and ends the session when stdin closes', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 'a', title: 'kept' });
      await store.tasks.add({ key: 'b', title: 'left held' });
      const client = await connect(db);
      const none = structured(await client.callTool({ name: 'baton_status', arguments: {} }));
      assert.equal(none.session, null);
      assert.equal((await store.sessions.list()).length, 0, 'no session before a tool needs one');
      const a = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 'a' } }));
      const again = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 'a' } }));
      assert.deepEqual([again.ok, again.granted, again.epoch], [true, false, a.epoch]);
      const ref = { key: 'a', epoch: a.epoch as number };
      const url = 'https://github.com/acme/api/pull/7';
      const e = structured(
        await client.callTool({ name: 'baton_effect', arguments: { ...ref, kind: 'pr', payload: { url } } }),
      );
      assert.equal(e.ok, true);
      assert.deepEqual(
        (await store.effects.list({ key: 'a' })).map((x) => x.payload),
        [{ url }],
      );
      const released = structured(
        await client.callTool({ name: 'baton_release', arguments: { ...ref, outcome: 'done' } }),
      );
      assert.equal(released.ok, true);
      const twice = structured(
        await client.callTool({ name: 'baton_release', arguments: { ...ref, outcome: 'done' } }),
      );
      assert.equal(twice.ok, false);
      assert.match(twice.message ?? '', /the claim on a at epoch 1 is not current: no one holds it now/);
      const b = structured(await client.callTool({ name: 'baton_claim', arguments: { key: 'b' } }));
      const session = b.session as number;
      const progress = await store.progress.get(session);
      assert.ok(
        (progress?.toolCalls ?? 0) >= 4 && progress?.effects === 1,
        'tool calls and the effect are progress',
      );
      await client.close();
      await waitUntil(
        async () => (await store.sessions.get(session))?.state === 'ended',
        10_000,
        'the session to end',
      );
      assert.equal((await store.tasks.get('b'))?.holder, null, 'ending the session released b');
      const [claimB] = await store.claims.history('b');
      assert.equal(claimB?.outcome, 'abandoned');
    }));

  test('acts under BATON_SESSION with the claim of BATON_KEY and BATON_EPOCH, and leaves that session alive', () =>
    withBaton(sqliteDatabase(), async (db, store) => {
      await store.tasks.add({ key: 'given', title: 'runner made it' });
      const s = await store.sessions.start({ kind: 'agent', host: 'runner-box', pid: 2 });
      const claim = await store.claims.acquire({ key: 'given', session: s.id });
      assert.ok(claim.ok);
      const env = { BATON_SESSION: String(s.id), BATON_KEY: 'given', BATON_EPOCH: String(claim.claim.epoch) };
      const client = await connect(db, env);
      const status = structured(await client.callTool({ name: 'baton_status', arguments: {} }));
      assert.equal(status.session, s.id);
      assert.deepEqual(status.claims, [
        {
          key: 'given',
          epoch: 1,
          current: true,
          since: new Date(claim.claim.claimedAt).toISOString(),
          heartbeatAt: new Date(claim.claim.heartbeatAt).toISOString(),
          holder: {
            session: s.id,
            host: 'runner-box',
            since: new Date(claim.claim.claimedAt).toISOString(),
            epoch: 1,
          },
        },
      ]);
      await client.close();
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await store.sessions.get(s.id))?.state, 'live');
      assert.equal((await store.tasks.get('given'))?.holder?.session, s.id);
    }));

  test('prints the config snippet for each client, and refuses an unknown one', async () => {
    const db = '/srv/baton/baton.db';
    const claude = await baton(db, 'mcp', '--print-config', 'claude');
    assert.equal(claude.code, 0, claude.stderr);
    const server = (
      JSON.parse(claude.stdout) as {
        mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
      }
    ).mcpServers['baton'];
    assert.equal(server?.command, process.execPath);
    assert.deepEqual(server?.args, [BIN, 'mcp']);
    assert.deepEqual(server?.env, { BATON_DB: db });
    assert.match(claude.stderr, /\.mcp\.json/);
    const cursor = await baton(db, 'mcp', '--print-config', 'cursor');
    assert.ok((JSON.parse(cursor.stdout) as { mcpServers: { baton?: unknown } }).mcpServers.baton);
    const codex = await baton(db, 'mcp', '--print-config', 'codex');
    assert.equal(
      codex.stdout,
      [
        '[mcp_servers.baton]',
        `command = ${JSON.stringify(process.execPath)}`,
        `args = [${JSON.stringify(BIN)}, "mcp"]`,
        'env = { BATON_DB = "/srv/baton/baton.db" }',
        '',
      ].join('\n'),
    );
    const bad = await baton(db, 'mcp', '--print-config', 'vim');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown MCP client "vim" — give one of claude, codex, cursor/);
  });
});
