/**
 * What an operator's second week found (docs/decisions/0048-an-operators-second-week.md): `baton
 * audit` stopped at its limit without a word, so a reader of last night's rows saw the oldest 1000
 * and took them for all; and after a token leaked nothing listed what that token had done, though
 * every row records its token. Real databases, the real `baton` command, a real `baton serve`.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { openStore } from '../store/open.js';
import { repoRoot, stopServers, type Run } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli } from '../../test/support/cli-suite.js';
import { call, serve } from '../../test/http/support.js';

after(stopServers);

interface Row {
  readonly id: number;
  readonly type: string;
  readonly key: string | null;
  readonly token: string | null;
  readonly detail: Record<string, unknown>;
}

describeCli("baton audit after an operator's second week", ({ setup }) => {
  test('a full page ends with the exact command for the next one; following it reads on', async () => {
    const t = await setup();
    for (const key of ['a1', 'a2', 'a3']) assert.equal((await t.run('task', 'add', key)).code, 0);
    const first = await t.run('audit', '--type', 'task:added', '--limit', '2');
    assert.equal(first.code, 0, first.stderr);
    const lines = first.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 3, first.stdout);
    const lastId = /^#(\d+) /.exec(lines[1] ?? '')?.[1];
    assert.equal(
      lines[2],
      `stopped at the limit, 2 entries; the next page: baton audit --type task:added --limit 2 --after ${lastId}`,
    );
    const next = await t.run('audit', '--type', 'task:added', '--limit', '2', '--after', String(lastId));
    assert.equal(next.code, 0, next.stderr);
    assert.match(next.stdout, /^#\d+ +\S+ +task:added +a3 /);
    assert.equal(next.stdout.trimEnd().split('\n').length, 1, 'a page not full: no next-page line');
    const json = await t.json<Row[]>(0, 'audit', '--type', 'task:added', '--limit', '2');
    assert.deepEqual(
      json.map((row) => row.key),
      ['a1', 'a2'],
      '--json stays an array',
    );
  });

  test('--by-token lists the rows one token wrote, its refusals too, and no other', async () => {
    const t = await setup();
    const leaked = await t.json<{ id: string; token: string }>(0, 'token', 'create', '--scope', 'operator');
    const viewer = await t.json<{ id: string; token: string }>(0, 'token', 'create', '--scope', 'viewer');
    const server = await serve(t.db);
    try {
      const add = await call(server.url, 'POST', '/v1/tasks', {
        token: leaked.token,
        body: { key: 'leak-1' },
      });
      assert.equal(add.status, 200, JSON.stringify(add.body));
      const refused = await call(server.url, 'POST', '/v1/tasks', {
        token: viewer.token,
        body: { key: 'v-1' },
      });
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
    } finally {
      await server.stop();
    }
    assert.equal((await t.run('task', 'add', 'clean-1')).code, 0);
    assert.equal((await t.run('token', 'revoke', leaked.id)).code, 0);
    const mine = await t.json<Row[]>(0, 'audit', '--by-token', leaked.id);
    assert.deepEqual(
      mine.map((row) => [row.type, row.key, row.token]),
      [['task:added', 'leak-1', leaked.id]],
    );
    const text = await t.run('audit', '--by-token', leaked.id);
    assert.match(text.stdout, /^#\d+ +\S+ +task:added +leak-1 +\{"by":"token [0-9a-f]{12}"\}\n$/);
    const theirs = await t.json<Row[]>(0, 'audit', '--by-token', viewer.id);
    assert.deepEqual(
      theirs.map((row) => [row.type, row.token, row.detail['token']]),
      [['auth:refused', viewer.id, viewer.id]],
    );
    assert.deepEqual(await t.json(0, 'audit', '--by-token', 'ffffffffffff'), []);
  });

  test('a revoked token presented again is refused 401, changes nothing, and the ledger says so once', async () => {
    const t = await setup();
    const leaked = await t.json<{ id: string; token: string }>(0, 'token', 'create', '--scope', 'operator');
    const viewer = await t.json<{ id: string; token: string }>(0, 'token', 'create', '--scope', 'viewer');
    assert.equal((await t.run('token', 'revoke', leaked.id)).code, 0);
    const server = await serve(t.db);
    let metrics = '';
    try {
      for (const key of ['after-1', 'after-2']) {
        const add = await call(server.url, 'POST', '/v1/tasks', { token: leaked.token, body: { key } });
        assert.equal(add.status, 401, JSON.stringify(add.body));
      }
      assert.equal((await call(server.url, 'POST', '/v1/tasks', { token: 'baton_nothing' })).status, 401);
      const beyond = await call(server.url, 'POST', '/v1/tasks', { token: viewer.token, body: { key: 'v' } });
      assert.equal(beyond.status, 403);
      metrics = await (await fetch(`${server.url}/metrics`)).text();
    } finally {
      // Stopped (SIGINT) within the minute: the summary of the use not written is written on the way out.
      assert.equal(await server.stop(), 0);
    }
    for (const [reason, count] of [
      ['revoked', 2],
      ['unknown', 1],
      ['scope', 1],
      ['ended', 0],
    ] as const)
      assert.match(metrics, new RegExp(`^baton_auth_refused_total\\{reason="${reason}"\\} ${count}$`, 'm'));
    assert.deepEqual(await t.json(0, 'task', 'list'), [], 'nothing added');
    const rows = await t.json<Row[]>(0, 'audit', '--by-token', leaked.id);
    assert.deepEqual(
      rows.map((row) => [row.type, row.detail['route'], row.detail['token']]),
      [
        ['auth:refused', 'POST /v1/tasks', leaked.id],
        ['auth:refused', 'requests with revoked or expired tokens', leaked.id],
      ],
      'one row for two uses (at most one a minute per token), and the summary of the other at the stop',
    );
    assert.match(String(rows[0]?.detail['reason']), /^the token is revoked; presented again/);
    assert.match(String(rows[1]?.detail['reason']), /^1 more uses of this revoked or expired token /);
  });

  test('a malformed --by-token, or one with --follow, is one line and exit 2', async () => {
    const t = await setup();
    const bad = assertOneErrorLine(await t.run('audit', '--by-token', 'nope'), 2, 'malformed');
    assert.match(
      bad,
      /token id must be 12 hexadecimal digits, got "nope" — copy the ID column of `baton token list`/,
    );
    const follow = assertOneErrorLine(
      await t.run('audit', '--follow', '--by-token', '0123456789ab'),
      2,
      'with --follow',
    );
    assert.match(follow, /--by-token and --follow do not go together/);
  });
});

describeCli("baton status after an operator's second week", ({ setup }) => {
  test('a drained host that no baton up serves again is counted as drained and named, with the fix', async () => {
    const t = await setup();
    const store = await openStore(t.db, { intent: 'use' });
    try {
      for (const name of ['box-1', 'box-2']) {
        const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1, ttlMs: 3_600_000 });
        const capacity = { ramTotalMb: 16_000, ramReservedMb: 1_000, ramFreeMb: 12_000, slotsMax: 2 };
        await store.hosts.register({ name, session: session.id, ...capacity });
        if (name === 'box-2') {
          assert.equal(await store.hosts.drain({ name, session: session.id }), true);
          await store.sessions.end(session.id);
        }
      }
    } finally {
      await store.close();
    }
    const status = await t.run('status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^hosts +1 live, 1 drained; 0\/2 slots busy$/m);
    const named = status.stdout
      .split('\n')
      .find((line) => /^ +box-2 drained, last report [\d.]+ m?s ago: /.test(line));
    assert.ok(
      named?.endsWith(
        'its `baton up` stopped after a drain and none serves it — ' +
          'start `baton up --host box-2` there (that enables it again), ' +
          'or `baton host retire box-2` if it is gone for good',
      ),
      status.stdout,
    );
    assert.doesNotMatch(status.stdout, /disabled and not serving/);
  });
});

/** `baton ...args` in `cwd`, its project (no BATON_DB, URL or token). */
function inProject(cwd: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  return new Promise((done) => {
    const bin = join(repoRoot(), 'bin', 'baton.js');
    execFile(process.execPath, [bin, ...args], { cwd, env }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

test('doctor after a SQLite restore: FAIL ledger while the key sealed a checkpoint the restore lacks', async () => {
  const project = mkdtempSync(join(tmpdir(), 'baton-operator-'));
  const run = async (...args: string[]): Promise<Run> => {
    const answer = await inProject(project, ...args);
    assert.notEqual(answer.code, 1, `baton ${args.join(' ')}: ${answer.stderr}`);
    return answer;
  };
  const files = ['baton.db', 'baton.db-wal', 'baton.db-shm'];
  const state = join(project, '.baton');
  try {
    for (const args of [['init'], ['ledger', 'init'], ['task', 'add', 'a'], ['audit', 'seal']]) {
      assert.equal((await run(...args)).code, 0, args.join(' '));
    }
    for (const file of files.filter((name) => existsSync(join(state, name)))) {
      copyFileSync(join(state, file), join(project, `${file}.backup`));
    }
    for (const args of [
      ['task', 'add', 'b'],
      ['audit', 'seal'],
    ])
      assert.equal((await run(...args)).code, 0);
    const ledgerLine = (out: string) => out.split('\n').find((line) => /^\S+ +ledger /.test(line)) ?? '';
    assert.match(ledgerLine((await run('doctor')).stdout), /^ok +ledger /);
    // The restore of operations.md: the three files aside, the backup in.
    for (const file of files.filter((name) => existsSync(join(state, name)))) rmSync(join(state, file));
    for (const file of files.filter((name) => existsSync(join(project, `${name}.backup`)))) {
      copyFileSync(join(project, `${file}.backup`), join(state, file));
    }
    const after = await run('doctor');
    assert.equal(after.code, 7, after.stdout);
    assert.match(
      ledgerLine(after.stdout),
      /^FAIL +ledger +the ledger was rewritten: checkpoint 2 \(sealed last with this key, recorded in .*\) is missing/,
    );
    assert.match(after.stdout, /move the record aside \(docs\/operations\.md#restore-a-backup, step 4\)/);
    // Step 4 done, the check passes: the sealer would seal again.
    const sealed = join(state, 'ledger.key.sealed');
    for (const file of readdirSync(sealed)) renameSync(join(sealed, file), join(project, file));
    assert.match(ledgerLine((await run('doctor')).stdout), /^ok +ledger /);
    // A record that cannot be parsed: the sealer refuses to seal, so doctor fails too.
    writeFileSync(join(sealed, readdirSync(project).find((name) => name.endsWith('.json')) ?? 'x'), '{no');
    const corrupt = await run('doctor');
    assert.equal(corrupt.code, 7, corrupt.stdout);
    assert.match(
      ledgerLine(corrupt.stdout),
      /^FAIL +ledger +the record of what this ledger key sealed last, /,
    );
    assert.match(corrupt.stdout, /move it aside \(the next seal writes it again\)/);
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
});

/** A stand-in for an older `baton serve`: GET /v1/audit answers `rows` whatever its query. */
async function olderServer(rows: readonly unknown[]): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    const found = request.method === 'GET' && request.url?.split('?')[0] === '/v1/audit';
    response.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify(found ? rows : { error: { code: 'not_found', message: 'no such route' } }));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(() => done())) };
}

function overHttp(url: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_URL: url, BATON_TOKEN: 'not-checked' };
  delete env['BATON_DB'];
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

test('--by-token against an older server, which ignores the filter and answers every row: refused', async () => {
  // Rows as a server sends them (`at` an ISO string), the second of another token (none).
  const row = (id: number, token: string | null) => ({
    ...{ id, at: '2026-12-06T00:00:00.000Z', type: 'task:added', key: `k${id}`, jobId: null },
    ...{ session: null, host: null, epoch: null, detail: {}, token },
  });
  const server = await olderServer([row(1, '0123456789ab'), row(2, null)]);
  try {
    const run = await overHttp(server.url, 'audit', '--by-token', '0123456789ab');
    const line = assertOneErrorLine(run, 2, 'older server');
    assert.match(line, /the API server predates `baton audit --by-token`: it answered rows of other tokens/);
    assert.equal(run.stdout, '');
  } finally {
    await server.close();
  }
});
