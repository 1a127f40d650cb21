/**
 * `baton doctor`'s agent-hosts check (docs/decisions/0047, "Loose ends (session 20)"), with real
 * `baton up` and `baton serve` processes: queued jobs without a command while no live `baton up`
 * has an --agent-command warn (exit 0: they wait, nothing is broken), with the fix, on the
 * database and over the API alike; ok with no such job, and once a host with one runs them.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, STEADY, withCluster, type ClusterFixture } from './cluster-support.js';

interface Check {
  readonly id: string;
  readonly level: string;
  readonly found: string;
  readonly fix: string | null;
}

type Run = { code: number; stdout: string; stderr: string };

/** `baton doctor --json` on the cluster's database, or over the API (`--api URL --token T`, no --db). */
async function agentHosts(
  c: ClusterFixture,
  ...api: string[]
): Promise<{ code: number; check: Check | undefined }> {
  const run = api.length === 0 ? await c.baton('doctor', '--json') : await overApi(c.dir, api);
  const { checks } = JSON.parse(run.stdout) as { checks: Check[] };
  return { code: run.code, check: checks.find((one) => one.id === 'agent-hosts') };
}

function overApi(cwd: string, api: readonly string[]): Promise<Run> {
  const env = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN']) delete env[name];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/baton.js'), ...api, 'doctor', '--json'], {
      cwd,
      env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** `baton serve` on the cluster's database; its URL, and a stop. */
async function serve(c: ClusterFixture): Promise<{ url: string; stop: () => void }> {
  const server = spawn(process.execPath, [join(ROOT, 'bin/baton.js'), 'serve', '--http', '127.0.0.1:0'], {
    cwd: c.dir,
    env: { ...process.env, BATON_DB: c.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((found, failed) => {
    let out = '';
    server.stdout.on('data', (data: Buffer) => {
      out += data.toString();
      const match = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match?.[1] !== undefined) found(match[1]);
    });
    server.on('exit', (code) => failed(new Error(`baton serve exited ${code}: ${out}`)));
  });
  return { url, stop: () => server.kill('SIGTERM') };
}

for (const db of bothEngines()) {
  describe(`baton doctor: jobs without a command and the hosts that can run them (${db.name})`, () => {
    test('warns while no live baton up has an --agent-command, on the database and over the API', () =>
      withCluster(db, async (c) => {
        c.up('h1', ...STEADY);
        await waitUntil(async () => (await c.store.hosts.list()).length === 1, 20_000, 'h1 registers');
        const none = await agentHosts(c);
        assert.equal(none.check?.level, 'ok', none.check?.found);
        assert.match(none.check?.found ?? '', /no queued job without a command/);
        assert.equal((await c.baton('enqueue', 'bare')).code, 0);
        const local = await agentHosts(c);
        assert.equal(local.code, 0, 'a warning: nothing failed');
        assert.equal(local.check?.level, 'warn', local.check?.found);
        assert.match(
          local.check?.found ?? '',
          /^1 queued job\(s\) without a command wait: no live `baton up` has an/,
        );
        assert.match(local.check?.fix ?? '', /baton up --agent-command/);
        const token = (
          await c.baton('token', 'create', '--scope', 'viewer', '--name', 'doctor')
        ).stdout.trim();
        const server = await serve(c);
        try {
          const remote = await agentHosts(c, '--api', server.url, '--token', token);
          assert.equal(remote.code, 0);
          assert.deepEqual(remote.check, local.check, 'over the API, the same line');
          const database = await overApi(c.dir, ['--api', server.url, '--token', token]);
          assert.match(database.stdout, /over the API at http/, 'doctor went over the API');
        } finally {
          server.stop();
        }
        c.up('h2', ...STEADY, '--agent-command', 'sleep 60');
        await waitUntil(
          async () => (await agentHosts(c)).check?.level === 'ok',
          20_000,
          'a host that can run it',
        );
      }));
  });
}
