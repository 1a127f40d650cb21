/**
 * The record of a lent worktree (lent-record.ts): written before anything is lent, and taken
 * back from by the next runner only once the runner that wrote it is gone. On a real repository,
 * with real processes; needs root (the worktree is lent to uid 47013).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { recordLend, takeBackOrphans } from './lent-record.js';
import { processIdentity, type ProcessIdentity } from './process-ancestry.js';
import { prepareWorktree } from './worktree.js';
import { lendWorktree } from './worktree-lend.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));
const NEEDS_ROOT = process.getuid?.() === 0 ? false : 'needs root: it lends a worktree to uid 47013';
const AGENT = 47013;
const RUNNER = { uid: 0, gid: 0 };

/** A worktree lent to AGENT, recorded in `records` (with `home` as the agent's HOME). */
async function lentAndRecorded(records: string, agentHome: string) {
  chmodSync(home, 0o711);
  const { repo, base } = makeRepo(home);
  chmodSync(join(repo, '..'), 0o711);
  const worktree = await prepareWorktree({ repoPath: repo, key: 'REC-1', epoch: 1, baseDir: base });
  const dotGit = readFileSync(join(worktree.path, '.git'), 'utf8');
  let file = '';
  lendWorktree(worktree.path, worktree.branch, AGENT, AGENT, (lent) => {
    file = recordLend(records, lent, agentHome);
    assert.equal(statSync(worktree.path).uid, 0, 'recorded before anything is lent');
  });
  // What an agent may do to its checkout: point git somewhere else.
  writeFileSync(join(worktree.path, '.git'), 'gitdir: /nowhere\n');
  return { repo, ...worktree, dotGit, file };
}

/** The identity a process had, once it has exited. */
async function deadRunner(): Promise<ProcessIdentity> {
  const child = spawn('sleep', ['60']);
  const identity = processIdentity(child.pid ?? 0);
  assert.ok(identity !== null);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return identity;
}

describe('a lent worktree’s record', () => {
  test('is left alone while the runner that wrote it runs', { skip: NEEDS_ROOT }, async () => {
    const records = mkdtempSync(join(tmpdir(), 'baton-lent-'));
    const { path, file } = await lentAndRecorded(records, join(records, 'home'));
    assert.equal(statSync(records).mode & 0o777, 0o700);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const said: string[] = [];
    await takeBackOrphans(records, RUNNER, (line) => said.push(line));
    assert.deepEqual(said, []);
    assert.equal(statSync(path).uid, AGENT, 'still lent: this process wrote the record and runs');
    assert.ok(existsSync(file));
  });

  test(
    'once its runner is gone, is taken back from: the runner’s again, .git restored, the HOME and record removed',
    { skip: NEEDS_ROOT },
    async () => {
      const records = mkdtempSync(join(tmpdir(), 'baton-lent-'));
      const agentHome = join(mkdtempSync(join(tmpdir(), 'baton-agents-')), String(AGENT));
      const { path, dotGit, file } = await lentAndRecorded(records, agentHome);
      writeFileSync(join(records, 'junk.json'), 'not json');
      const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeFileSync(file, JSON.stringify({ ...record, runner: await deadRunner() }));
      const said: string[] = [];
      await takeBackOrphans(records, RUNNER, (line) => said.push(line));
      assert.deepEqual(said, [
        `ignoring ${join(records, 'junk.json')}: not a record of a lent worktree (remove it if it is stale)`,
        `took back worktree ${path} from uid ${AGENT}, lent by a runner that is gone`,
      ]);
      assert.equal(statSync(path).uid, 0);
      assert.equal(statSync(join(path, 'README.md')).uid, 0);
      assert.equal(readFileSync(join(path, '.git'), 'utf8'), dotGit);
      assert.match(git(path, 'status', '--porcelain'), /^$/, "the runner's git works in it again");
      assert.deepEqual(readdirSync(records), ['junk.json']);
      assert.equal(existsSync(agentHome), false);
    },
  );

  test(
    'kills what the uid still runs, unless a live runner’s registered range holds the uid now',
    { skip: NEEDS_ROOT },
    async () => {
      const records = mkdtempSync(join(tmpdir(), 'baton-lent-'));
      const { file } = await lentAndRecorded(records, join(records, 'home'));
      const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeFileSync(file, JSON.stringify({ ...record, runner: await deadRunner() }));
      const agent = spawn('setpriv', [
        `--reuid=${AGENT}`,
        `--regid=${AGENT}`,
        '--clear-groups',
        'sleep',
        '60',
      ]);
      const ended = new Promise((resolve) => agent.once('exit', resolve));
      const other = spawn('sleep', ['60']); // a live runner whose range holds AGENT
      const live = processIdentity(other.pid ?? 0);
      assert.ok(live !== null, 'the process runs');
      const { startTicks } = live;
      const registered = join('/run/baton/agent-uids', `${other.pid}-${startTicks}.json`);
      mkdirSync(dirname(registered), { recursive: true, mode: 0o700 });
      writeFileSync(
        registered,
        JSON.stringify({ first: AGENT, last: AGENT, gid: AGENT, pid: other.pid, startTicks }),
      );
      try {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await takeBackOrphans(records, RUNNER, () => undefined);
        await new Promise((resolve) => setTimeout(resolve, 300)); // time for a kill to be seen
        assert.deepEqual([agent.exitCode, agent.signalCode], [null, null], 'the other runner’s agent lives');
        assert.equal(existsSync(file), false, 'taken back all the same');
        // Without the other runner, the uid's processes are killed.
        rmSync(registered);
        const again = await lentAndRecorded(records, join(records, 'home'));
        const recorded = JSON.parse(readFileSync(again.file, 'utf8')) as Record<string, unknown>;
        writeFileSync(again.file, JSON.stringify({ ...recorded, runner: await deadRunner() }));
        await takeBackOrphans(records, RUNNER, () => undefined);
        assert.equal(await ended, null, 'killed by a signal');
        assert.equal(agent.signalCode, 'SIGKILL');
      } finally {
        rmSync(registered, { force: true });
        agent.kill('SIGKILL');
        other.kill('SIGKILL');
      }
    },
  );
});
