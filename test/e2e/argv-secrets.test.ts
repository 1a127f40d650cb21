/**
 * Secrets on the command line (docs/security.md, "Secrets on the command line"): every uid reads
 * every process's arguments (/proc/<pid>/cmdline), so `baton up --agent-uids` refuses a `--db`
 * URL with its password, or a `--token`, there (exit 2, nothing opened); without `--agent-uids`
 * (agents share the runner's uid and read its environment anyway) and on `baton serve` and the
 * other long-running commands, a warning on stderr. Then a real `baton up --agent-uids` on
 * PostgreSQL, given its URL with a password of its own in BATON_DB, with an agent in a worktree:
 * no process it starts (shims, setpriv, reaper, launcher, git) carries the password or a token in
 * its arguments, read the whole run long.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { isTerminalJobState } from '../../src/core/job.js';
import { Workspaces } from '../../src/coordinator/workspaces.js';
import { openStore } from '../../src/store/open.js';
import { postgresDatabase, postgresServers } from '../support/databases.js';
import { isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, ROOT, UpProcess } from './cluster-support.js';

isolateGit();
const BIN = join(ROOT, 'bin', 'baton.js');
const server = postgresServers()[0];
const NO_PG = server === undefined ? 'no PostgreSQL server' : false;
const NEEDS_ROOT = process.getuid?.() === 0 ? NO_PG : 'needs root: it runs an agent as uid 47061';
const UIDS = [47061, 47062] as const;

const SEEN = 'which every uid on this machine can read (ps, /proc/<pid>/cmdline)';
const REFUSED_DB =
  `baton: baton up --agent-uids: --db carries the database password on the command line, ${SEEN}, the agents' ` +
  'uids too — give the URL in the BATON_DB environment variable (readable by this uid alone), ' +
  'or leave the password out of it and use PGPASSWORD or ~/.pgpass\n';
const WARNED_DB = (command: string): RegExp =>
  new RegExp(`baton: warning: --db carries the database password on the command line of baton ${command}, `);

function baton(args: readonly string[], env: Readonly<Record<string, string>> = {}, cwd = tmpdir()) {
  // Bounded: a refusal that did not happen would leave baton up running.
  return spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

/** Runs a long-running command until `ready` shows on its stdout, then stops it: its stderr. */
async function stderrOnceReady(args: readonly string[], env: Record<string, string>, ready: RegExp) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: tmpdir(), env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await waitUntil(
      () => ready.test(stdout) || child.exitCode !== null,
      20_000,
      `${args.join(' ')}: ${ready}`,
    );
    assert.match(stdout, ready, stderr);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return stderr;
}

describe('secrets on the command line', () => {
  test(
    'baton up --agent-uids refuses --db with a password and --token: exit 2, one line, nothing opened',
    { skip: NO_PG },
    async () => {
      const url = await postgresDatabase(server ?? { name: '', url: '' }).fresh();
      const cwd = mkdtempSync(join(tmpdir(), 'baton-argv-'));
      const refused = baton(['--db', url, 'up', '--host', 'h1', '--agent-uids', '47061-47062'], {}, cwd);
      assert.equal(refused.status, 2, refused.stderr);
      assert.equal(refused.stderr, REFUSED_DB);
      assert.equal(refused.stdout, '');
      assert.deepEqual(readdirSync(cwd), [], 'no .baton/ made');
      const store = await openStore(url);
      try {
        assert.deepEqual(await store.hosts.list(), [], 'nothing joined');
      } finally {
        await store.close();
      }
      // A database that does not exist: still 2, not 4 (nothing was connected to).
      const missing = baton(['--db', `${url}_none`, 'up', '--agent-uids', '47061-47062'], {}, cwd);
      assert.equal(missing.status, 2, missing.stderr);
      const file = join(cwd, 'none.db');
      const token = baton(['--db', file, '--token', 'baton_x', 'up', '--agent-uids', '47061-47062'], {}, cwd);
      assert.equal(token.status, 2, token.stderr);
      const tokenLine = `baton: baton up --agent-uids: --token carries an API token on the command line, ${SEEN}, `;
      assert.equal(
        token.stderr,
        `${tokenLine}the agents' uids too — give it in the BATON_TOKEN environment variable\n`,
      );
      assert.equal(existsSync(file), false, 'no database file made');
    },
  );

  test(
    'without --agent-uids, baton up, serve and audit --follow warn on stderr and run',
    { skip: NO_PG },
    async () => {
      const c = await clusterFixture(postgresDatabase(server ?? { name: '', url: '' }));
      try {
        const up = c.up('h1', '--no-http'); // the fixture gives --db with the password
        await up.waitRunning();
        assert.equal(up.log().match(new RegExp(WARNED_DB('up'), 'g'))?.length, 1, up.log());
        const served = await stderrOnceReady(['--db', c.url, 'serve'], {}, /serving the API/);
        assert.match(served, WARNED_DB('serve'));
        assert.equal(served.split('\n').length, 2, served);
        // The same URL in BATON_DB (negative control): no warning.
        assert.equal(await stderrOnceReady(['serve'], { BATON_DB: c.url }, /serving the API/), '');
        const follow = baton(['--api', 'http://127.0.0.1:9', '--token', 'baton_x', 'audit', '--follow']);
        assert.match(
          follow.stderr,
          /^baton: warning: --token carries an API token on the command line of baton audit --follow, /,
        );
        const env = baton(['audit', '--follow'], { BATON_URL: 'http://127.0.0.1:9', BATON_TOKEN: 'baton_x' });
        assert.doesNotMatch(env.stderr, /warning/);
      } finally {
        await c.close();
      }
    },
  );

  test(
    'no process a PostgreSQL baton up --agent-uids starts carries the password or a token in its arguments',
    { skip: NEEDS_ROOT, timeout: 120_000 },
    async () => {
      const c = await clusterFixture(postgresDatabase(server ?? { name: '', url: '' }));
      const role = `baton_argv_${randomBytes(4).toString('hex')}`;
      const secret = `pw${randomBytes(12).toString('hex')}`;
      const admin = new pg.Client({ connectionString: c.url });
      await admin.connect();
      let up: UpProcess | null = null;
      try {
        await admin.query(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${secret}'`);
        const url = c.url.replace(/^postgres:\/\/[^@]*@/, `postgres://${role}:${secret}@`);
        assert.notEqual(url, c.url);
        chmodSync(c.dir, 0o711);
        const { repo } = makeRepo(c.dir);
        chmodSync(join(repo, '..'), 0o711);
        const meet = mkdtempSync(join(tmpdir(), 'baton-meet-'));
        chmodSync(meet, 0o1777);
        const workspaces = new Workspaces(c.store);
        await workspaces.addWorkspace({ name: 'repo', path: repo, kind: 'worktree' });
        await workspaces.addTask({ key: 'argv', workspace: 'repo' });
        const wait = `i=0; while [ ! -e ${meet}/go ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done`;
        const work = `touch ${meet}/started; ${wait}; echo w > w.txt && git add w.txt && git commit -qm w`;
        await c.store.jobs.enqueue({ key: 'argv', command: work, attemptMax: 1 });
        const logPath = join(c.dir, 'up-argv.log');
        const flags = ['--drain', '0', '--heartbeat-interval', '0.5', '--stale-after', '10'];
        const args = [BIN, 'up', '--host', 'argv', ...flags, '--agent-uids', `${UIDS[0]}-${UIDS[1]}`];
        const fd = openSync(logPath, 'a');
        const env = { ...process.env, BATON_DB: url };
        up = new UpProcess(
          'argv',
          spawn(process.execPath, args, { cwd: c.dir, env, stdio: ['ignore', fd, fd] }),
          logPath,
        );
        const runner = up;
        const seen = new Map<number, string>();
        const leaks = new Set<string>();
        const scan = (): void => {
          for (const [pid, line] of processesOf(runner.pid)) {
            seen.set(pid, line);
            if (line.includes(secret) || /baton_[A-Za-z0-9_-]{20,}/.test(line)) leaks.add(`${pid}: ${line}`);
          }
        };
        const timer = setInterval(scan, 20);
        try {
          await runner.waitRunning(30_000);
          await waitUntil(
            () => existsSync(join(meet, 'started')),
            60_000,
            `the agent to start\n${runner.log()}`,
          );
          scan();
          writeFileSync(join(meet, 'go'), '');
          await waitUntil(
            async () =>
              (await c.store.jobs.list({ key: 'argv' })).every((job) => isTerminalJobState(job.status)),
            60_000,
            `the job to end\n${runner.log()}`,
          );
          await new Promise((resolve) => setTimeout(resolve, 500)); // the worktree retired: its git calls
          scan();
        } finally {
          clearInterval(timer);
        }
        const [job] = await c.store.jobs.list({ key: 'argv' });
        assert.equal(job?.status, 'done', `${job?.reason ?? ''}\n${runner.log()}`);
        assert.deepEqual([...leaks], [], 'a password or token in the arguments of a process');
        // The scan saw the children it is about: the runner, its agent (as a pool uid) and more.
        const lines = [...seen.values()];
        assert.ok(seen.has(runner.pid), 'the runner itself');
        assert.ok(
          lines.some((line) => line.includes(`${meet}/go`)),
          `the agent's shell\n${lines.join('\n')}`,
        );
        assert.ok(seen.size >= 4, lines.join('\n'));
        assert.doesNotMatch(runner.log(), /warning: --db/);
      } finally {
        up?.signal('SIGKILL');
        await up?.exited();
        await c.close();
        await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
        await admin.end();
      }
    },
  );
});

/** Every live process below `root` (its own included) and of the pool's uids, with its arguments joined by spaces. */
function processesOf(root: number): Map<number, string> {
  const parent = new Map<number, number>();
  const uid = new Map<number, number>();
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      parent.set(Number(name), Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]));
      uid.set(Number(name), Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]));
    } catch {
      // gone meanwhile
    }
  }
  const below = (pid: number): boolean => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; at = parent.get(at) ?? 0, hops++)
      if (at === root) return true;
    return false;
  };
  const out = new Map<number, string>();
  for (const pid of parent.keys()) {
    if (!below(pid) && !(UIDS as readonly number[]).includes(uid.get(pid) ?? -1)) continue;
    try {
      out.set(pid, readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim());
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
