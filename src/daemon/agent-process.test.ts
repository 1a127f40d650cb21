import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openContainment, type Containment } from '../os/containment.js';
import { prepareScope, spawnAgent, type AgentProcess } from './agent-process.js';
import type { JobScope } from '../os/containment.js';
import type { WaitingAgent } from '../os/launcher.js';
import { waitUntil } from '../../test/support/wait.js';

/** A cgroup containment with its launcher, or null where this host has no cgroup to give. */
function cgroups(): Containment | null {
  const containment = openContainment({ choice: 'auto', shimPath: '' });
  if (containment.launcher !== null) return containment;
  void containment.close();
  return null;
}

function spawnIn(
  dir: string,
  scope: JobScope,
  waiting: WaitingAgent | null,
  command: string,
  name = 'agent.log',
): Promise<AgentProcess> {
  return spawnAgent({
    ...{ command, cwd: dir, scope, logDir: dir, logName: name, logMaxBytes: 1 << 20 },
    onLogProblem: (problem) => assert.fail(problem),
    values: {
      key: 'k-1',
      title: 'a title',
      feedback: '',
      feedback_from: '',
      session: 7,
      job: 1,
      epoch: 1,
      host: 'h',
      attempt: 1,
    },
    ...{ dbUrl: join(dir, 'baton.db'), agentEnv: ['PATH'], more: { BATON_JOB_EPOCH: '1' }, waiting },
  });
}

function exited(agent: AgentProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((done) => agent.child.on('exit', (code, signal) => done({ code, signal })));
}

test('the launcher forks the agent, not the runner: in its cgroups, own session, own environment', async (t) => {
  const containment = cgroups();
  if (containment === null) return t.skip('no cgroup on this host');
  const dir = mkdtempSync(join(tmpdir(), 'baton-launch-test-'));
  process.env['TEST_NOT_FOR_AGENTS'] = 'secret';
  try {
    const early = await prepareScope(containment, { id: 1, epoch: 1, ramMb: 256 });
    assert.ok(early?.waiting, 'a waiting agent');
    // It is in the job's cgroups before it is told its command.
    await waitUntil(
      () => Promise.resolve(early.scope.members().length === 1),
      5000,
      'the agent in its cgroups',
    );
    const agent = await spawnIn(
      dir,
      early.scope,
      early.waiting,
      'echo "ppid=$PPID pid=$$ sid=$(cut -d" " -f6 /proc/$$/stat)"; grep -c /job-1-1$ /proc/self/cgroup; env; exit 7',
    );
    assert.deepEqual(await exited(agent), { code: 7, signal: null });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the log file's last write
    const log = readFileSync(join(dir, 'agent.log'), 'utf8');
    const [, ppid, pid, sid] = /ppid=(\d+) pid=(\d+) sid=(\d+)/.exec(log) ?? [];
    assert.notEqual(Number(ppid), process.pid, `not forked by the runner:\n${log}`);
    assert.equal(pid, String(agent.child.pid), 'the pid reported is the agent');
    assert.equal(sid, pid, 'a session of its own');
    assert.match(log, new RegExp(`^${containment.ref.dirs.length}$`, 'm'), 'in each of the job cgroups');
    assert.match(log, /^BATON_KEY=k-1$/m);
    assert.match(log, /^BATON_TITLE=a title$/m);
    assert.doesNotMatch(log, /TEST_NOT_FOR_AGENTS/, 'nothing outside the allowlist');
    await early.scope.close();
  } finally {
    delete process.env['TEST_NOT_FOR_AGENTS'];
    await containment.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a waiting agent runs nothing when cancelled, and a fence kills a launched agent', async (t) => {
  const containment = cgroups();
  if (containment === null) return t.skip('no cgroup on this host');
  const dir = mkdtempSync(join(tmpdir(), 'baton-launch-test-'));
  try {
    const early = await prepareScope(containment, { id: 2, epoch: 1, ramMb: null });
    assert.ok(early?.waiting);
    await waitUntil(
      () => Promise.resolve(early.scope.members().length === 1),
      5000,
      'the agent in its cgroups',
    );
    early.waiting.cancel();
    await waitUntil(
      () => Promise.resolve(early.scope.members().length === 0),
      5000,
      'the cancelled agent gone',
    );
    await early.scope.close();

    const fenced = await prepareScope(containment, { id: 3, epoch: 1, ramMb: null });
    assert.ok(fenced?.waiting);
    const agent = await spawnIn(dir, fenced.scope, fenced.waiting, 'sleep 30 & sleep 30', 'fenced.log');
    await waitUntil(
      () => Promise.resolve(fenced.scope.members().length === 3),
      5000,
      'the agent and its sleeps',
    );
    fenced.scope.kill();
    assert.deepEqual(await exited(agent), { code: null, signal: 'SIGKILL' });
    await fenced.scope.close();
  } finally {
    await containment.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a launcher killed between fork and start: the agent still runs and reports; a new one follows', async (t) => {
  const containment = cgroups();
  if (containment === null) return t.skip('no cgroup on this host');
  const launcher = containment.launcher;
  assert.ok(launcher);
  const dir = mkdtempSync(join(tmpdir(), 'baton-launch-test-'));
  try {
    const early = await prepareScope(containment, { id: 4, epoch: 1, ramMb: null });
    assert.ok(early?.waiting);
    await waitUntil(
      () => Promise.resolve(early.scope.members().length === 1),
      5000,
      'the agent in its cgroups',
    );
    const first = launcher.pid;
    assert.ok(first !== null);
    process.kill(first, 'SIGKILL');
    await waitUntil(() => Promise.resolve(launcher.pid === null), 5000, 'the launcher seen dead');
    const agent = await spawnIn(dir, early.scope, early.waiting, 'exit 3');
    assert.deepEqual(await exited(agent), { code: 3, signal: null });
    await early.scope.close();

    const next = await prepareScope(containment, { id: 5, epoch: 1, ramMb: null });
    assert.ok(next?.waiting, 'a new launcher forks the next agent');
    assert.notEqual(launcher.pid, first);
    const again = await spawnIn(dir, next.scope, next.waiting, 'exit 0', 'next.log');
    assert.deepEqual(await exited(again), { code: 0, signal: null });
    await next.scope.close();
  } finally {
    await containment.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a runner killed outright leaves no launcher directory behind: its launcher removes it at EOF', async (t) => {
  const probe = cgroups();
  if (probe === null) return t.skip('no cgroup on this host');
  await probe.close();
  const containmentJs = new URL('../os/containment.js', import.meta.url).href;
  const script = `const { openContainment } = await import(${JSON.stringify(containmentJs)});
    const c = openContainment({ choice: 'auto', shimPath: '' });
    process.stdout.write(c.launcher.dir + '\\n');
    setInterval(() => {}, 1000);`;
  const runner = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const dir = await new Promise<string>((resolve) =>
    runner.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8').trim())),
  );
  assert.ok(existsSync(dir), `${dir} made`);
  runner.kill('SIGKILL');
  await waitUntil(() => Promise.resolve(!existsSync(dir)), 5000, 'the launcher directory removed');
});
