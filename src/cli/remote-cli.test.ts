/**
 * The CLI's remote mode: the commands an agent uses print the same text, the same --json and
 * exit with the same codes over the HTTP API (BATON_URL and BATON_TOKEN, no database) as with
 * the database. The same script runs against two identical databases, one through `--db`, one
 * through a real `baton serve`; the outputs must match once times and actors are masked.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliModes, repoRoot, type Run } from '../../test/support/cli.js';
import { bothEngines, sqliteDatabase } from '../../test/support/databases.js';
import { waitUntil } from '../../test/support/wait.js';

const root = repoRoot();

function run(env: Record<string, string>, args: readonly string[], cwd = root): Promise<Run> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete base[name];
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(root, 'bin/baton.js'), ...args],
      { cwd, env: { ...base, ...env } },
      (e, stdout, stderr) =>
        done({ code: e === null ? 0 : typeof e.code === 'number' ? e.code : -1, stdout, stderr }),
    );
  });
}

const mask = (text: string): string =>
  text
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'T')
    .replace(/token [0-9a-f]{12}( \([^)]*\))?|[\w.-]+@[\w.-]+/g, 'ACTOR');

/** Two sessions and three tasks; the second session holds `theirs`. Returns the first's id. */
async function given(db: string): Promise<{ s: string; s2: string }> {
  const env = { BATON_DB: db };
  for (const key of ['k', 'e', 'theirs']) assert.equal((await run(env, ['task', 'add', key])).code, 0);
  const s = (await run(env, ['session', 'start', '--kind', 'human', '--ttl', '1h'])).stdout.trim();
  const s2 = (await run(env, ['session', 'start', '--kind', 'human', '--ttl', '1h'])).stdout.trim();
  assert.equal((await run(env, ['claim', 'theirs', '--session', s2])).code, 0);
  return { s, s2 };
}

const script = (s: string): string[][] => [
  ['claim', 'k', '--session', s],
  ['claim', 'k', '--session', s, '--json'],
  ['heartbeat', s, '--key', 'k', '--epoch', '1', '--json'],
  ['heartbeat', s],
  ['effect', 'k', '--session', s, '--epoch', '1', '--kind', 'note', '--payload', '{"a":1}', '--json'],
  ['task', 'show', 'k', '--json'],
  ['task', 'show', 'k'],
  ['claim', 'theirs', '--session', s],
  ['claim', 'theirs', '--session', s, '--json'],
  ['release', 'k', '--session', s, '--epoch', '2'],
  ['release', 'k', '--session', s, '--epoch', '1', '--outcome', 'released', '--json'],
  ['claim', 'e', '--session', s],
  ['escalate', 'e', '--reason', 'which one?', '--session', s, '--epoch', '1', '--json'],
  ['escalate', 'e', '--reason', 'again', '--session', s, '--epoch', '1'],
  ['next', '--session', s, '--json'],
  ['next', '--session', s],
  ['claim', '', '--session', s],
  ['heartbeat', s, '--key', 'k'],
  ['task', 'show', 'nope'],
];

// Over HTTP on the engine cliModes runs HTTP on (test/support/cli.ts says why one is enough).
for (const db of bothEngines().filter((d) => cliModes(d.engine).includes('api'))) {
  describe(`${db.name}: the agent's commands over HTTP`, () => {
    test('print the same text and JSON, and exit the same, as with the database', async () => {
      const local = await db.fresh();
      const remote = await db.fresh();
      const a = await given(local);
      const b = await given(remote);
      assert.deepEqual(a, b, 'the two databases are alike');
      const made = await run({ BATON_DB: remote }, [
        'token',
        'create',
        '--scope',
        'agent',
        '--session',
        b.s,
        '--json',
      ]);
      const token = (JSON.parse(made.stdout) as { token: string }).token;
      const server = spawn(
        process.execPath,
        ['bin/baton.js', '--db', remote, 'serve', '--http', '127.0.0.1:0'],
        {
          cwd: root,
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      );
      let out = '';
      server.stdout.on('data', (d: Buffer) => (out += d.toString()));
      try {
        await waitUntil(() => /http:\/\/127\.0\.0\.1:\d+/.test(out), 15_000, 'baton serve');
        const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '';
        for (const args of script(a.s)) {
          const viaDb = await run({ BATON_DB: local }, args);
          const viaApi = await run({ BATON_URL: url, BATON_TOKEN: token }, args);
          const what = `baton ${args.join(' ')}`;
          assert.equal(viaApi.code, viaDb.code, `${what}: exit ${viaApi.code} ${viaApi.stderr}`);
          assert.equal(mask(viaApi.stdout), mask(viaDb.stdout), `${what}: stdout`);
          assert.equal(mask(viaApi.stderr), mask(viaDb.stderr), `${what}: stderr`);
        }
      } finally {
        server.kill('SIGTERM');
      }
    });
  });
}

/** `baton serve` on the database; returns its URL and a stop function. */
async function serveOn(db: string): Promise<{ url: string; stop: () => void }> {
  const server = spawn(process.execPath, ['bin/baton.js', '--db', db, 'serve', '--http', '127.0.0.1:0'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  server.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await waitUntil(() => /http:\/\/127\.0\.0\.1:\d+/.test(out), 15_000, 'baton serve');
  return { url: /(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '', stop: () => server.kill('SIGTERM') };
}

describe('refusals over HTTP', () => {
  const refusals =
    'a token beyond its scope, or a bad one, exits 6 and changes nothing; local commands say why they refuse';
  test(refusals, async () => {
    const db = await sqliteDatabase().fresh();
    const made = await run({ BATON_DB: db }, ['token', 'create', '--scope', 'viewer', '--json']);
    const viewer = (JSON.parse(made.stdout) as { token: string }).token;
    const { url, stop } = await serveOn(db);
    try {
      const as = (token: string, args: string[]) => run({ BATON_URL: url, BATON_TOKEN: token }, args);
      const refused = await as(viewer, ['task', 'add', 'k', '--json']);
      assert.equal(refused.code, 6, refused.stderr);
      assert.equal((JSON.parse(refused.stdout) as { error: string }).error, 'forbidden');
      assert.equal(refused.stderr.split('\n').filter(Boolean).length, 1, refused.stderr);
      assert.equal((await as('not-a-token', ['task', 'add', 'k'])).code, 6);
      const listed = await as(viewer, ['task', 'list', '--json']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(JSON.parse(listed.stdout), [], 'nothing was added');
      // github sync says so before it asks for a GitHub token (none here), which would not help.
      for (const args of [
        ['db', 'migrate'],
        ['audit', 'verify'],
        ['serve'],
        ['github', 'sync', 'acme/api'],
      ]) {
        const local = await run({ BATON_URL: url, BATON_TOKEN: viewer, GITHUB_TOKEN: '' }, args);
        assert.equal(local.code, 2, local.stderr);
        assert.match(
          local.stderr,
          /^baton: baton .* does not work over the HTTP API .*: .* — run it where the database is/,
        );
      }
    } finally {
      stop();
    }
  });

  test('a token with spaces or a newline is refused before anything is sent (exit 2, one line)', async () => {
    // Pasting the whole line `baton token create` prints about a token, or a token with its
    // newline, used to come back from the server as "the Authorization header is not Bearer".
    const pasted = ['token 9f71077b89f0 (operator): shown once', 'baton_abc\n', 'baton abc'];
    for (const token of pasted) {
      // Port 9 (discard): nothing answers there, so a request sent would fail as unreachable (5).
      const refused = await run({ BATON_URL: 'http://127.0.0.1:9', BATON_TOKEN: token }, ['queue', 'list']);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(
        refused.stderr,
        /^baton: the API token \(--token or BATON_TOKEN\) holds spaces or control/,
      );
      assert.match(refused.stderr, /— give the token alone, as `baton token create` printed it/);
      assert.equal(refused.stderr.split('\n').filter(Boolean).length, 1, refused.stderr);
      assert.equal(refused.stdout, '');
    }
    const empty = await run({ BATON_URL: 'http://127.0.0.1:9' }, ['--token', '', 'queue', 'list']);
    assert.equal(empty.code, 2, empty.stderr);
    assert.match(
      empty.stderr,
      /but no token — set BATON_TOKEN or pass --token/,
      'an empty --token is no token',
    );
  });

  test('baton init over HTTP refuses in one line and makes no database where it runs', async () => {
    // An agent under `baton up` has BATON_URL and BATON_TOKEN set; `baton init` there once made a
    // stray .baton/baton.db in its working directory instead of saying it needs the database.
    const dir = mkdtempSync(join(tmpdir(), 'baton-remote-init-'));
    try {
      const env = { BATON_URL: 'http://127.0.0.1:9', BATON_TOKEN: 'baton_unused' };
      const refused = await run(env, ['init'], dir);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(
        refused.stderr,
        /^baton: baton init does not work over the HTTP API .* — run it where the database is/,
      );
      assert.equal(refused.stderr.split('\n').filter(Boolean).length, 1, refused.stderr);
      assert.equal(existsSync(join(dir, '.baton')), false, 'no database was made');
      const local = await run(env, ['--db', join(dir, 'here.db'), 'init'], dir);
      assert.equal(local.code, 0, `--db wins over BATON_URL: ${local.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
