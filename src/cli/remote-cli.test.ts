/**
 * The CLI's remote mode: the commands an agent uses print the same text, the same --json and
 * exit with the same codes over the HTTP API (BATON_URL and BATON_TOKEN, no database) as with
 * the database. The same script runs against two identical databases, one through `--db`, one
 * through a real `baton serve`; the outputs must match once times and actors are masked.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { repoRoot, type Run } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';
import { waitUntil } from '../../test/support/wait.js';

const root = repoRoot();

function run(env: Record<string, string>, args: readonly string[]): Promise<Run> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete base[name];
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['bin/baton.js', ...args],
      { cwd: root, env: { ...base, ...env } },
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

for (const db of bothEngines()) {
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
