/**
 * `baton up --agent-uids` (decision 0025), end to end with a real `baton up`, real git and real
 * uids: two agents running at once each run as a uid of the pool, cannot read the runner's or
 * each other's environment under /proc nor move into another cgroup, and still commit, push
 * through the guard and reach Baton with their token; the worktree comes back to the runner, which
 * retires it and runs the task again. The same agents without the flag read both environments:
 * what the flag changes. Then the refusals at start (exit 2, nothing joined). Needs root (CI runs
 * as root); SQLite only: nothing here depends on the engine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTerminalJobState } from '../../src/core/job.js';
import { Workspaces } from '../../src/coordinator/workspaces.js';
import { branchForKey } from '../../src/os/worktree.js';
import { sqliteDatabase } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, ROOT, STEADY, type ClusterFixture, type UpProcess } from './cluster-support.js';

isolateGit();
const BIN = join(ROOT, 'bin', 'baton.js');
const NEEDS_ROOT = process.getuid?.() === 0 ? false : 'needs root: it runs agents as uids 47001-47002';
const KEYS = ['uid-a', 'uid-b'] as const;

/** What one agent does, each step reported as `<key> <what>=<result>` on its output. */
function agentScript(meet: string, runnerPid: number, other: string): string {
  const say = (text: string): string => `echo "$BATON_KEY ${text}"`;
  const tryTo = (what: string, command: string, yes: string, no: string): string =>
    `if ${command}; then ${say(`${what}=${yes}`)}; else ${say(`${what}=${no}`)}; fi`;
  const waitFor = (file: string): string =>
    `i=0; while [ ! -s ${file} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`;
  const baton = `'${process.execPath}' '${BIN}'`;
  return [
    say('uid=$(id -u) gid=$(id -g) home=$HOME'),
    `echo $$ > ${meet}/$BATON_KEY.pid`,
    waitFor(`${meet}/${other}.pid`),
    tryTo('runner-environ', `cat /proc/${runnerPid}/environ >/dev/null 2>&1`, 'read', 'refused'),
    tryTo(
      'sibling-environ',
      `cat /proc/$(cat ${meet}/${other}.pid)/environ >/dev/null 2>&1`,
      'read',
      'refused',
    ),
    'procs="${BATON_HOOK_CGROUPS%% *}"',
    `if [ -z "$procs" ]; then ${say('cgroup=none')}; else ` +
      `${tryTo('cgroup', '(echo $$ > "$procs") 2>/dev/null', 'moved', 'refused')}; fi`,
    tryTo(
      'commit',
      'echo "$BATON_KEY" > work.txt && git add work.txt && git commit -qm "work $BATON_KEY"',
      'ok',
      'failed',
    ),
    // main is in packed-refs only (runTwo packs it): a new loose file would shadow it.
    tryTo(
      'main',
      'echo "$(git rev-parse HEAD)" > "$(git rev-parse --path-format=absolute --git-common-dir)/refs/heads/main"',
      'moved',
      'refused',
    ),
    // The remote is a directory of the runner's here (a real one is over SSH or HTTPS): the agent
    // trusts it in its own HOME's config, which git's local transport reads on the remote side.
    tryTo('push', "git config --global --add safe.directory '*' && git push -q origin HEAD", 'ok', 'failed'),
    tryTo(
      'baton',
      `${baton} heartbeat "$BATON_SESSION" --key "$BATON_KEY" --epoch "$BATON_EPOCH" --json >/dev/null`,
      'ok',
      'failed',
    ),
    `echo done > ${meet}/$BATON_KEY.done`,
    waitFor(`${meet}/${other}.done`),
  ].join('\n');
}

/** The pids of live processes whose real uid is one of `uids`. */
function processesOf(uids: readonly number[]): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const status = readFileSync(`/proc/${name}/status`, 'utf8');
        const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
        return uids.includes(uid) && !/^State:\s+Z/m.test(status);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Every agent's reports from the job logs, by key: `{ uid: '47001', commit: 'ok', … }`. */
function reports(dir: string): Map<string, Record<string, string>> {
  const logs = join(dir, '.baton', 'logs');
  const out = new Map<string, Record<string, string>>();
  for (const file of existsSync(logs) ? readdirSync(logs) : []) {
    for (const line of readFileSync(join(logs, file), 'utf8').split('\n')) {
      const [key = '', ...pairs] = line.trim().split(' ');
      if (!(KEYS as readonly string[]).includes(key)) continue;
      const seen = out.get(key) ?? {};
      for (const pair of pairs) {
        const at = pair.indexOf('=');
        if (at > 0) seen[pair.slice(0, at)] = pair.slice(at + 1);
      }
      out.set(key, seen);
    }
  }
  return out;
}

/** Two coding tasks on one repository, both jobs run at once by a `baton up` with `extra` flags. */
async function runTwo(c: ClusterFixture, extra: readonly string[]) {
  // Agents of other uids must reach their worktrees (below c.dir) and the repository's .git.
  chmodSync(c.dir, 0o711);
  const { repo, remote } = makeRepo(c.dir);
  chmodSync(join(repo, '..'), 0o711);
  execFileSync('chmod', ['-R', 'a+rwX', remote]); // the remote is the agents' to push to
  // Two uids push to it: what one's push makes there the other must write into (git init --shared).
  git(remote, 'config', 'core.sharedRepository', 'world');
  git(repo, 'pack-refs', '--all'); // main in packed-refs only, as after a git gc
  const meet = mkdtempSync(join(tmpdir(), 'baton-meet-'));
  chmodSync(meet, 0o1777);
  const workspaces = new Workspaces(c.store);
  await workspaces.addWorkspace({ name: 'repo', path: repo, kind: 'worktree' });
  // STEADY: with FAST's 1 s trust window, a claim heartbeat late on a loaded machine fenced an
  // agent (`no beat was sent: this process was too busy`) and its one attempt ended failed.
  const up = c.up('h1', ...STEADY, '--slots', '2', ...extra);
  await up.waitRunning();
  for (const [index, key] of KEYS.entries()) {
    await workspaces.addTask({ key, workspace: 'repo' });
    const command = agentScript(meet, up.pid, KEYS[1 - index] ?? '');
    await c.store.jobs.enqueue({ key, command, attemptMax: 1 });
  }
  await endOf(c, up, KEYS);
  return { up, repo, remote, reports: reports(c.dir) };
}

async function endOf(c: ClusterFixture, up: UpProcess, keys: readonly string[], jobs = 1): Promise<void> {
  for (const key of keys)
    await waitUntil(
      async () => {
        const list = await c.store.jobs.list({ key });
        return list.length >= jobs && list.every((job) => isTerminalJobState(job.status));
      },
      90_000,
      `the jobs of ${key} to end\n${up.log()}`,
    );
}

describe('baton up --agent-uids', () => {
  for (const containment of ['auto', 'process-group'])
    test(
      `two agents at once run as distinct uids of the pool, read neither the runner nor each other, and still commit, push and reach Baton (containment ${containment})`,
      { skip: NEEDS_ROOT },
      async () => {
        const c = await clusterFixture(sqliteDatabase());
        try {
          const flags = ['--agent-uids', '47001-47003', '--containment', containment];
          const { up, repo, remote, reports: seen } = await runTwo(c, flags);
          const context = `${JSON.stringify([...seen])}\n${up.log()}`;
          for (const key of KEYS) {
            const [job] = await c.store.jobs.list({ key });
            assert.equal(job?.status, 'done', `${key}: ${job?.reason ?? ''}\n${context}`);
          }
          const [a, b] = KEYS.map((key) => seen.get(key) ?? {});
          const uids = [a?.['uid'], b?.['uid']].map(Number);
          assert.notEqual(uids[0], uids[1], context);
          for (const uid of uids) assert.ok(uid >= 47001 && uid <= 47003, `uid ${uid} from the pool`);
          assert.match(up.log(), /agents run as uids 47001-47003 \(group 47001\), one uid per running agent/);
          for (const report of [a, b]) {
            assert.equal(report?.['gid'], '47001', context);
            assert.equal(report?.['runner-environ'], 'refused', context);
            assert.equal(report?.['sibling-environ'], 'refused', context);
            assert.notEqual(report?.['cgroup'], 'moved', context);
            assert.equal(report?.['main'], 'refused', context);
            assert.equal(report?.['commit'], 'ok', context);
            assert.equal(report?.['push'], 'ok', context);
            assert.equal(report?.['baton'], 'ok', context);
          }
          const output = readdirSync(join(c.dir, '.baton', 'logs'))
            .map((file) => readFileSync(join(c.dir, '.baton', 'logs', file), 'utf8'))
            .join('\n');
          assert.equal(
            output.match(/push allowed: session \d+ holds uid-[ab] at epoch 1/g)?.length,
            2,
            output,
          );
          // Handed back: no process of the pool's uids is left, the runner retired both worktrees,
          // and the branches hold the agents' commits.
          assert.deepEqual(processesOf([47001, 47002, 47003]), [], up.log());
          const worktrees = join(c.dir, '.baton', 'worktrees');
          assert.deepEqual(existsSync(worktrees) ? readdirSync(worktrees) : [], [], up.log());
          assert.equal(git(repo, 'log', '-1', '--format=%s', 'main'), 'first', 'main did not move');
          for (const key of KEYS) {
            assert.equal(git(repo, 'log', '-1', '--format=%s', branchForKey(key)), `work ${key}`);
            assert.equal(git(remote, 'log', '-1', '--format=%s', branchForKey(key)), `work ${key}`);
            const tracking = `refs/remotes/origin/${branchForKey(key)}`;
            assert.equal(
              git(repo, 'rev-parse', tracking),
              git(repo, 'rev-parse', branchForKey(key)),
              tracking,
            );
            const ref = join(repo, '.git', 'refs', 'heads', branchForKey(key));
            if (existsSync(ref)) assert.equal(statSync(ref).uid, 0, `${ref} is the runner's again`);
          }
          // The next run of a task starts from the branch the agent left, in a worktree made anew.
          const again =
            'git log -1 --format=%s | grep -qx "work uid-a" && echo more >> work.txt && git commit -qam more';
          const reopened = await c.baton('reopen', 'uid-a', '--reason', 'once more');
          assert.equal(reopened.code, 0, reopened.stderr);
          await c.store.jobs.enqueue({ key: 'uid-a', command: again, attemptMax: 1 });
          await endOf(c, up, ['uid-a'], 2);
          const runs = await c.store.jobs.list({ key: 'uid-a' });
          assert.ok(
            runs.every((job) => job.status === 'done'),
            `${JSON.stringify(runs.map((job) => [job.status, job.reason]))}\n${up.log()}`,
          );
          assert.equal(git(repo, 'log', '-1', '--format=%s', branchForKey('uid-a')), 'more');
        } finally {
          await c.close();
        }
      },
    );

  test(
    'a job whose repository other uids cannot reach fails saying which directory, and runs nothing',
    { skip: NEEDS_ROOT },
    async () => {
      const c = await clusterFixture(sqliteDatabase());
      try {
        chmodSync(c.dir, 0o711);
        const { repo } = makeRepo(c.dir); // its parent stays 0700
        const workspaces = new Workspaces(c.store);
        await workspaces.addWorkspace({ name: 'repo', path: repo, kind: 'worktree' });
        await workspaces.addTask({ key: 'closed', workspace: 'repo' });
        await c.store.jobs.enqueue({ key: 'closed', command: 'touch ran', attemptMax: 1 });
        const up = c.up('h1', ...STEADY, '--agent-uids', '47004');
        await endOf(c, up, ['closed']);
        const [job] = await c.store.jobs.list({ key: 'closed' });
        assert.equal(job?.status, 'failed', up.log());
        assert.match(
          job?.reason ?? '',
          /^agent uid not seated: agents cannot reach the repository .*\/repo\/\.git: .*\/case-\w+ is not searchable by other uids; fix: let others search it/,
        );
        assert.match(
          up.log(),
          /uid 47004 \(group 47004\), one uid per running agent: at most 1 at once, not \d+/,
        );
        assert.deepEqual(readdirSync(join(c.dir, '.baton', 'worktrees')), [], up.log());
        assert.equal(existsSync(join(repo, 'ran')), false);
        // Kept out of .baton/, an agent must not read the database or the logs through the API:
        // without a token, every read is refused (a viewer token reads).
        await up.waitForLog(/serving the API and dashboard on http/);
        const url = /serving the API and dashboard on (http:\/\/\S+)/.exec(up.log())?.[1] ?? '';
        assert.match(
          up.log(),
          /reads of the API, the dashboard and \/metrics need a token with --agent-uids/,
        );
        for (const path of ['/v1/jobs', `/v1/jobs/${job?.id ?? 1}/log`, '/v1/tasks']) {
          assert.equal((await fetch(`${url}${path}`)).status, 401, `${path} without a token`);
        }
        const viewer = (await c.store.tokens.create({ scope: 'viewer', name: 'reader' })).secret;
        const read = await fetch(`${url}/v1/jobs`, { headers: { authorization: `Bearer ${viewer}` } });
        assert.equal(read.status, 200);
      } finally {
        await c.close();
      }
    },
  );

  test(
    'the same two agents without --agent-uids read the runner and each other under /proc',
    { skip: NEEDS_ROOT },
    async () => {
      const c = await clusterFixture(sqliteDatabase());
      try {
        const { up, reports: seen } = await runTwo(c, []);
        const context = `${JSON.stringify([...seen])}\n${up.log()}`;
        for (const key of KEYS) {
          const report = seen.get(key);
          assert.equal(report?.['uid'], '0', context);
          assert.equal(report?.['runner-environ'], 'read', context);
          assert.equal(report?.['sibling-environ'], 'read', context);
          assert.notEqual(report?.['cgroup'], 'refused', context);
          assert.equal(report?.['main'], 'moved', context);
        }
      } finally {
        await c.close();
      }
    },
  );

  test(
    'refuses a malformed range, one holding root or the runner, and a runner that cannot switch uids: exit 2, nothing joined',
    { skip: NEEDS_ROOT },
    async () => {
      const c = await clusterFixture(sqliteDatabase());
      try {
        const cases: [string, RegExp][] = [
          ['5-3', /--agent-uids must be a range A-B/],
          ['a-b', /--agent-uids must be a range A-B/],
          ['0-10', /--agent-uids 0-10 holds uid 0 \(root\)/],
        ];
        for (const [range, message] of cases) {
          const result = await c.baton('up', '--host', 'h1', '--agent-uids', range);
          assert.equal(result.code, 2, `${range}: ${result.stdout}${result.stderr}`);
          assert.match(result.stderr, message);
          assert.doesNotMatch(result.stdout, /joined as session/);
        }
        // Not root: a runner without CAP_SETUID (and the rest) is refused before anything starts.
        const cwd = mkdtempSync(join(tmpdir(), 'baton-noroot-'));
        chmodSync(cwd, 0o777);
        mkdirSync(join(cwd, 'home'), { mode: 0o777 });
        const args = ['--reuid=47009', '--regid=47009', '--clear-groups', process.execPath, BIN];
        const plain = spawnSync(
          'setpriv',
          [...args, '--db', join(cwd, 'none.db'), 'up', '--host', 'h2', '--agent-uids', '47001-47002'],
          { cwd, encoding: 'utf8', env: { ...process.env, HOME: join(cwd, 'home') } },
        );
        assert.equal(plain.status, 2, `${plain.stdout}${plain.stderr}`);
        assert.match(plain.stderr, /cannot run agents as other uids: this process lacks CAP_CHOWN, CAP_KILL/);
        assert.equal(existsSync(join(cwd, 'none.db')), false, 'no database was made');
        assert.deepEqual(await c.store.hosts.list(), []);
      } finally {
        await c.close();
      }
    },
  );
});
