/**
 * End-to-end tests of the `baton` command's refusals, help and choice of database: exit codes
 * and one-line errors that change nothing (cli.test.ts has the rest of the command's contract).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baton, localOnly, repoRoot, stopServers, type Run } from '../../test/support/cli.js';
import { assertOneErrorLine, bundle, describeCli, ISO, type Obj } from '../../test/support/cli-suite.js';

const root = repoRoot();
const UNREACHABLE_PG = 'postgres://127.0.0.1:1/nope';
const postgresEngineBuilt = existsSync(join(root, 'dist/src/store/postgres/postgres-store.js'));

after(stopServers);

describeCli('baton CLI refusals', ({ mode, setup, fresh }) => {
  test('exits 4 for an unknown task, session or job', async () => {
    const t = await setup();
    const s = await t.session();
    await t.json(0, 'task', 'add', 'k1');
    const cases: string[][] = [
      ['task', 'show', 'nope'],
      ['claim', 'nope', '--session', s],
      ['claim', 'k1', '--session', '999'],
      ['heartbeat', '999'],
      ['session', 'end', '999'],
      ['job', 'show', '999'],
      ['cancel', '999'],
    ];
    for (const args of cases) assertOneErrorLine(await t.run(...args), 4, args.join(' '));
    assert.equal((await t.json(4, 'task', 'show', 'nope'))['error'], 'not_found');
  });

  test('exits 2 for bad input and bad usage with one line, and writes nothing', async () => {
    const t = await setup();
    const s = await t.session();
    await t.json(0, 'task', 'add', 'k1');
    const before = await t.counts();
    const negative = await t.run('task', 'add', 'k2', '--priority', '-1');
    const line = assertOneErrorLine(negative, 2, 'negative priority');
    assert.match(line, /priority must be from 0 to 1000, got -1 — /);
    const cases: string[][] = [
      ['task', 'add', 'has space'],
      ['task', 'add', 'k3', '--label', ''],
      ['task', 'add', 'k3', '--priority', 'high'],
      ['session', 'start', '--kind', 'robot'],
      ['claim', 'k1', '--session', 'abc'],
      ['heartbeat', s, '--key', 'k1'],
      ['heartbeat', s, '--epoch', '1'],
      ['release', 'k1', '--session', s, '--epoch', '0'],
      ['release', 'k1', '--session', s, '--epoch', '1', '--outcome', 'abandoned'],
      ['enqueue', 'k9', '--ram-mb', '-5'],
      ['enqueue', 'k9', '--attempts', '0'],
      ['queue', 'list', '--status', 'bogus'],
      ['audit', '--limit', '0'],
      ['claim', 'k1', '--session', s, '--nope'],
      ['claim', 'k1'],
      ['task', 'add'],
      ['frobnicate'],
    ];
    for (const args of cases) assertOneErrorLine(await t.run(...args), 2, args.join(' '));
    const usage = await t.json(2, 'claim', 'k1');
    assert.equal(usage['error'], 'invalid_input');
    assert.match(String(usage['hint']), /baton claim --help/);
    assert.deepEqual(await t.counts(), before);
  });

  test("a refusal's hint names the flag that was given and reads as English", async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const s = await t.session();
    const before = await t.counts();
    const cases: [string[], string][] = [
      [
        ['task', 'add', 's4', '--after', 's4'],
        'task s4 cannot depend on itself — name a task other than s4 to wait for',
      ],
      [
        ['task', 'depend', 'k1', '--on', 'k1'],
        'task k1 cannot depend on itself — name a task other than k1 to wait for',
      ],
      [
        ['token', 'create', '--scope', 'viewer', '--name', ''],
        '--name is empty — give a non-empty token name',
      ],
      [['task', 'add', 'k2', '--assignee', ''], '--assignee is empty — give a non-empty assignee'],
      [
        ['token', 'create', '--scope', 'operator', '--host', 'vm'],
        'an operator token is not bound to a host — leave out --host',
      ],
      // The CLI's flags in both modes: over the API, the server's hint names its body's fields instead.
      [
        ['token', 'create', '--scope', 'agent'],
        'an agent token is bound to one session — pass --session <id>',
      ],
      [['token', 'create', '--scope', 'host'], 'a host token is bound to one host — pass --host <name>'],
      [
        ['token', 'create', '--scope', 'viewer', '--session', s],
        'a viewer token is not bound to a session — leave out --session',
      ],
    ];
    for (const [args, said] of cases) {
      assert.equal(assertOneErrorLine(await t.run(...args), 2, args.join(' ')), `baton: ${said}`);
    }
    assert.deepEqual(await t.counts(), before);
    if (mode !== 'db') return;
    const dir = mkdtempSync(join(tmpdir(), 'baton-key-'));
    const notKey = join(dir, 'notdb.txt');
    writeFileSync(notKey, 'hi\n');
    const line = assertOneErrorLine(await t.run('ledger', 'init', '--key-file', notKey), 2, 'ledger init');
    assert.equal(
      line,
      `baton: the ledger key file ${notKey} is not a private key — name the key file \`baton ledger init\` wrote ` +
        'with --key-file (or BATON_LEDGER_KEY), or leave both out for .baton/ledger.key',
    );
    rmSync(dir, { recursive: true });
  });

  test('refuses two output formats at once with exit 2, one line naming both, and nothing on stdout', async () => {
    const t = await setup();
    const cases: [string[], string][] = [
      [['report', 'sessions', '--json', '--csv'], '--json and --csv'],
      [['--json', 'report', 'sessions', '--csv'], '--json and --csv'],
      [['audit', 'export', '--format', 'csv', '--json'], '--json and --format csv'],
      [['audit', 'export', '--format', 'jsonl', '--json'], '--json and --format jsonl'],
    ];
    for (const [args, both] of cases) {
      const refused = await t.run(...args);
      const line = assertOneErrorLine(refused, 2, args.join(' '));
      assert.ok(line.startsWith(`baton: ${both} ask for two output formats at once — `), line);
      assert.equal(refused.stdout, '', `${args.join(' ')} printed on stdout`);
    }
    const csv = await t.run('report', 'sessions', '--csv');
    assert.match(csv.stdout, /^session,kind,host,pid,/);
    assert.ok(Array.isArray(await t.json(0, 'report', 'sessions')));
  });

  test('refuses a switch given both ways with exit 2 and one line naming both, changing nothing', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const before = await t.counts();
    const cases: [string[], string][] = [
      [['task', 'set', 'k1', '--requires-filesystem', '--no-requires-filesystem'], '--requires-filesystem'],
      [['task', 'set', 'k1', '--no-requires-filesystem', '--requires-filesystem'], '--requires-filesystem'],
      [['task', 'set', 'k1', '--workspace', 'w1', '--no-workspace'], '--workspace'],
    ];
    for (const [args, flag] of cases) {
      const line = assertOneErrorLine(await t.run(...args), 2, args.join(' '));
      assert.ok(line.startsWith(`baton: ${flag} and --no-${flag.slice(2)} were both given — `), line);
    }
    assert.deepEqual(await t.counts(), before);
    // One way at a time still works.
    await t.json(0, 'task', 'set', 'k1', '--no-requires-filesystem');
  });

  test('names the flag as typed when it refuses its value, and an argument by what it is', async () => {
    const t = await setup();
    const s = await t.session();
    await t.json(0, 'task', 'add', 'k1');
    const before = await t.counts();
    const cases: [string[], string][] = [
      [['job', 'next', '--session', s, '--wait', '6m'], '--wait must be from 0 s to 5 m, got "6m" — '],
      [['job', 'next', '--session', s, '--wait=6m'], '--wait must be from 0 s to 5 m'],
      [['job', 'next', '--session', s, '--batch', '0'], '--batch must be from 1 to 1000, got 0'],
      [['task', 'add', 'k2', '--priority', 'high'], '--priority must be a whole number'],
      [['task', 'add', 'k2', '--label', ''], '--label is empty'],
      [['task', 'add', 'k2', '--review', 'maybe'], '--review must be one of required, none'],
      [['task', 'add', 'k2', '--url', 'javascript:alert(1)'], '--url must be an http(s) address'],
      [['enqueue', 'k1', '--ram-mb', '-5'], '--ram-mb must be from 0 to '],
      [['enqueue', 'k1', '--attempts', '0'], '--attempts must be from 1 to 100'],
      [['claim', 'k1', '--session', 'abc'], '--session must be a whole number, got "abc"'],
      [['release', 'k1', '--session', s, '--epoch', 'x'], '--epoch must be a whole number'],
      [['queue', 'list', '--status', 'bogus'], '--status must be one of '],
      [['task', 'list', '--state', 'weird'], '--state must be one of '],
      [['session', 'start', '--kind', 'robot'], '--kind must be one of agent, human, daemon'],
      [['session', 'start', '--ttl', '1y'], '--ttl must be a duration'],
      [['heartbeat', 'abc'], 'session id must be a whole number'],
      [['job', 'show', 'x'], 'job id must be a whole number'],
    ];
    for (const [args, start] of cases) {
      const line = assertOneErrorLine(await t.run(...args), 2, args.join(' '));
      assert.ok(line.startsWith(`baton: ${start}`), `${args.join(' ')}: ${line}`);
    }
    assert.deepEqual(await t.counts(), before);
  });

  const dbFlag = localOnly(mode, 'it names the database with --db');
  test('exits 2 for an unknown database scheme', { skip: dbFlag }, async () => {
    const t = await setup();
    assertOneErrorLine(await t.run('--db', 'mysql://x', 'task', 'list'), 2, 'mysql');
    const refused = await t.json(2, 'task', 'list', '--db', 'mysql://x');
    assert.equal(refused['error'], 'invalid_input');
    assert.match(String(refused['message']), /mysql/);
    // Mistyped URLs are refused too, creating nothing (issue 14, item 9).
    for (const url of ['postgres:/baton', 'postgresql:baton', 'pg://x', 'mysql:x']) {
      const r = await t.run('--db', url, 'task', 'list');
      assertOneErrorLine(r, 2, 'unknown database scheme');
      assert.equal(existsSync(join(root, url.split('/')[0] ?? url)), false, `nothing made for ${url}`);
    }
  });

  test('prefers --db over BATON_DB', { skip: dbFlag }, async () => {
    const t = await setup();
    const other = await fresh();
    await t.json(0, 'task', 'add', 'only-in-baton-db');
    assert.equal(await t.count('task', 'list'), 1);
    assert.equal(await t.count('task', 'list', '--db', other), 0);
  });
});

describe('baton CLI without a database', () => {
  test('prints help with the exit code table and the database explanation', async () => {
    const run = await baton('unused.db', '--help');
    assert.equal(run.code, 0);
    for (const text of ['Exit codes:', 'BATON_DB', '--db', 'store_unavailable', 'fenced']) {
      assert.ok(run.stdout.includes(text), `help lacks ${text}`);
    }
    const sub = await baton('unused.db', 'claim', '--help');
    assert.equal(sub.code, 0);
    assert.match(sub.stdout, /--session <id>/);
  });

  const skip = postgresEngineBuilt ? false : 'the PostgreSQL engine is not built yet';
  test('exits 5 with one line when PostgreSQL is unreachable', { skip }, async () => {
    assertOneErrorLine(await baton(UNREACHABLE_PG, 'task', 'list'), 5, 'unreachable postgres');
    const refused = await bundle(UNREACHABLE_PG, 'db').json(5, 'task', 'list');
    assert.equal(refused['error'], 'store_unavailable');
  });

  test('refuses --json for the commands that print no JSON, with exit 2, one line, and nothing made', async (t) => {
    // Run in an empty folder without BATON_DB: `serve` would make .baton/baton.db there, the others
    // would wait; a run that is not refused is stopped after 10 s and fails its row.
    const dir = mkdtempSync(join(tmpdir(), 'baton-json-refused-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG', 'BATON_SESSION'])
      delete env[name];
    const run = (args: readonly string[]): Promise<Run> =>
      new Promise((done) => {
        const child = execFile(
          process.execPath,
          [join(root, 'bin/baton.js'), ...args],
          { cwd: dir, env, timeout: 10_000 },
          (error, stdout, stderr) =>
            done({ code: typeof error?.code === 'number' ? error.code : error ? -1 : 0, stdout, stderr }),
        );
        child.stdin?.end();
      });
    const rows: [args: string[], command: string][] = [
      [['--json', 'serve', '--http', '127.0.0.1:0'], 'serve'],
      [['--json', 'mcp'], 'mcp'],
      [['--json', 'hook', 'pre-tool'], 'hook'],
      [['--json', 'hook-keeper', '--session', '1'], 'hook-keeper'],
    ];
    // Every row is run and checked, so that a broken refusal shows in each row it breaks.
    const problems: string[] = [];
    for (const [args, command] of rows) {
      const refused = await run(args);
      const lines = refused.stderr.split('\n').filter((line) => line !== '');
      const start = `baton: --json does not apply to baton ${command}: `;
      const error = refused.stdout.startsWith('{') ? (JSON.parse(refused.stdout) as Obj)['error'] : null;
      const made = readdirSync(dir);
      if (
        refused.code !== 2 ||
        lines.length !== 1 ||
        !lines[0]?.startsWith(start) ||
        error !== 'invalid_input'
      )
        problems.push(`${args.join(' ')}: exit ${refused.code}, stderr ${JSON.stringify(refused.stderr)}`);
      if (made.length > 0) problems.push(`${args.join(' ')} made ${made.join(', ')}`);
      rmSync(join(dir, '.baton'), { recursive: true, force: true });
    }
    assert.deepEqual(problems, []);
  });

  test('baton --json up prints its log as JSON Lines, each line an object with its time', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-json-up-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const child = spawn(
      process.execPath,
      [
        join(root, 'bin/baton.js'),
        '--json',
        '--db',
        join(dir, 'b.db'),
        'up',
        '--no-http',
        '--host',
        'json-box',
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    let out = '';
    child.stdout.setEncoding('utf8');
    const lines = await new Promise<string[]>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`no joined line within 30 s: ${out}`)), 30_000);
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        if (!out.includes('joined')) return;
        clearTimeout(timer);
        done(out.split('\n').filter((line) => line !== ''));
      });
    });
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    for (const line of lines) {
      const entry = JSON.parse(line) as Obj;
      assert.deepEqual(Object.keys(entry), ['at', 'line'], line);
      assert.match(String(entry['at']), ISO);
    }
    const said = lines.map((line) => String((JSON.parse(line) as Obj)['line']));
    assert.equal(said[0], `database ${join(dir, 'b.db')} (SQLite): created (no database was there)`);
    assert.match(said[1] ?? '', /^baton up on json-box: /);
  });

  test('prints mcp --print-config as JSON with --json, for a TOML client too', async () => {
    const db = '/srv/baton/baton.db';
    for (const client of ['claude', 'cursor']) {
      const plain = await baton(db, 'mcp', '--print-config', client);
      const json = await baton(db, '--json', 'mcp', '--print-config', client);
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual(JSON.parse(json.stdout), JSON.parse(plain.stdout), `${client}: the same settings`);
    }
    const codex = await baton(db, '--json', 'mcp', '--print-config', 'codex');
    assert.equal(codex.code, 0, codex.stderr);
    assert.match(codex.stderr, /config\.toml/);
    const bin = join(root, 'bin', 'baton.js');
    assert.deepEqual(JSON.parse(codex.stdout), {
      mcp_servers: { baton: { command: process.execPath, args: [bin, 'mcp'], env: { BATON_DB: db } } },
    });
  });
});
