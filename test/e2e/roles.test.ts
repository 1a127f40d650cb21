/**
 * Least privilege on PostgreSQL (docs/security.md): `baton db roles` splits an owner role from a
 * runtime role. The runtime role runs a real flow (`baton up`, an agent that heartbeats and
 * records an effect, the CLI), yet cannot erase or edit the ledger, disable its triggers, rewrite
 * a queued job's command or create anything. Its password lives in a password file only: no file
 * Baton writes and no agent environment holds it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freshPostgresUrl, refusedUrls } from '../support/databases.js';
import { withoutPassword } from '../../src/core/redact.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, UpProcess } from './cluster-support.js';

const BIN = join(ROOT, 'bin', 'baton.js');

function run(args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

/** Every file under `dir` whose bytes contain `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesHolding(path, needle));
    else if (entry.isFile() && statSync(path).size < 50_000_000 && readFileSync(path).includes(needle))
      out.push(path);
  }
  return out;
}

async function asRole(url: string, work: (c: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

describe('PostgreSQL roles', () => {
  test('the runtime role runs baton up and the CLI but cannot erase or edit the ledger', async () => {
    const adminUrl = await freshPostgresUrl();
    const cwd = mkdtempSync(join(tmpdir(), 'baton-roles-'));
    const suffix = randomBytes(4).toString('hex');
    const owner = `bo_${suffix}`;
    const runtime = `br_${suffix}`;
    const password = `rt-${randomBytes(8).toString('hex')}`;
    const admin = { ...process.env, BATON_DB: adminUrl };
    assert.equal((await run(['task', 'list'], cwd, admin)).code, 0, 'the owner side migrates first');
    const roles = await run(['db', 'roles', '--owner', owner, '--runtime', runtime], cwd, admin);
    assert.equal(roles.code, 0, roles.stderr);
    await asRole(adminUrl, async (c) => {
      await c.query(`ALTER ROLE ${runtime} PASSWORD '${password}'`);
    });
    const u = new URL(adminUrl);
    const runtimeUrl = `postgres://${runtime}@${u.host}${u.pathname}`;
    const passfile = join(cwd, 'pgpass');
    writeFileSync(passfile, `${u.hostname}:${u.port}:*:${runtime}:${password}\n`, { mode: 0o600 });
    const env = { ...process.env, BATON_DB: runtimeUrl, PGPASSFILE: passfile };
    let up: UpProcess | null = null;
    try {
      // The ledger and the queue, as a hostile agent holding the runtime credentials tried them.
      await asRole(`postgres://${runtime}:${password}@${u.host}${u.pathname}`, async (c) => {
        await c.query(`INSERT INTO audit_events (at, type, detail) VALUES (now(), 'probe', '{}')`);
        for (const [sql, refusal] of [
          ['ALTER TABLE audit_events DISABLE TRIGGER USER', /must be owner/],
          ['DELETE FROM audit_events', /permission denied/],
          [`UPDATE audit_events SET type = 'x'`, /permission denied/],
          ['TRUNCATE audit_events', /permission denied/],
          ['DELETE FROM effects', /permission denied/],
          ['ALTER TABLE jobs DISABLE TRIGGER jobs_command_fixed', /must be owner/],
          ['CREATE TABLE escape (a int)', /permission denied/],
        ] as const) {
          await assert.rejects(c.query(sql), refusal, sql);
        }
      });

      const log = join(cwd, 'up.log');
      const child = spawn(
        process.execPath,
        [
          BIN,
          'up',
          '--host',
          'rt',
          '--heartbeat-interval',
          '0.5',
          '--stale-after',
          '2',
          '--agent-env',
          'PGPASSFILE',
        ],
        { cwd, env, stdio: ['ignore', openSync(log, 'a'), openSync(log, 'a')] },
      );
      up = new UpProcess('rt', child, log);
      const baton = `'${process.execPath}' '${BIN}'`;
      const agent = [
        `${baton} heartbeat "$BATON_SESSION" --key "$BATON_KEY" --epoch "$BATON_EPOCH"`,
        `${baton} effect "$BATON_KEY" --session "$BATON_SESSION" --epoch "$BATON_EPOCH" --kind comment`,
        'env > env.txt',
      ].join(' && ');
      for (const args of [
        ['task', 'add', 'flow', '--title', 'a real flow'],
        ['enqueue', 'flow', '--command', agent],
        ['enqueue', 'later', '--command', 'true', '--priority', '1000'],
      ]) {
        const r = await run(args, cwd, env);
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      }
      const show = async (key: string) =>
        (
          JSON.parse((await run(['queue', 'list', '--key', key, '--json'], cwd, env)).stdout) as {
            status: string;
          }[]
        )[0];
      await waitUntil(
        async () => (await show('flow'))?.status === 'done',
        30_000,
        `the flow to finish:\n${up.log()}`,
      );
      const effects = await run(['effects', 'flow', '--json'], cwd, env);
      assert.equal((JSON.parse(effects.stdout) as unknown[]).length, 1, effects.stderr);
      const audit = await run(['audit', '--task', 'flow'], cwd, env);
      assert.match(audit.stdout, /job:finished/);
      assert.equal((await run(['hosts'], cwd, env)).code, 0);

      const envDump = readFileSync(join(cwd, 'env.txt'), 'utf8');
      assert.ok(!envDump.includes(password), 'the agent saw the password');
      assert.deepEqual(
        filesHolding(cwd, password).filter((f) => f !== passfile),
        [],
      );
    } finally {
      up?.signal('SIGTERM');
      await up?.exited();
      await asRole(adminUrl, async (c) => {
        await c.query(`REASSIGN OWNED BY ${owner} TO CURRENT_USER`);
        await c.query(`DROP OWNED BY ${runtime}`);
        await c.query(`DROP OWNED BY ${owner}`);
        await c.query(`DROP ROLE ${runtime}`);
        await c.query(`DROP ROLE ${owner}`);
      });
    }
  });

  test('a database that does not exist is exit 4, a refused password 5, each one line with its fix', async () => {
    const adminUrl = await freshPostgresUrl();
    const cwd = mkdtempSync(join(tmpdir(), 'baton-roles-refused-'));
    const { missing, wrongPassword } = await refusedUrls(adminUrl);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env['BATON_DEBUG'];
    const gone = await run(['--db', missing, 'db', 'roles'], cwd, env);
    assert.equal(gone.code, 4, gone.stderr);
    const name = new URL(missing).pathname.slice(1);
    assert.match(
      gone.stderr,
      new RegExp(`^baton: database ${name} on PostgreSQL at \\S+ not found — create it`),
    );
    assert.equal(gone.stderr.trim().split('\n').length, 1, gone.stderr);
    if (wrongPassword === null) return; // the server lets any password in
    // As docs/security.md gives it: the URL without a password, the password in PGPASSWORD.
    const bad = { ...env, PGPASSWORD: 'not-the-password' };
    const refused = await run(['--db', withoutPassword(adminUrl), 'db', 'roles'], cwd, bad);
    assert.equal(refused.code, 5, refused.stderr);
    assert.match(
      refused.stderr,
      /^baton: cannot use PostgreSQL at \S+: password authentication failed .* — check the user/,
    );
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
  });
});
