/**
 * Lending a worktree to an agent's uid and taking it back (worktree-lend.ts), on a real repository.
 * Needs root (chown to another uid); skips, saying so, otherwise.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { branchForKey, prepareWorktree } from './worktree.js';
import { sampleWorktree } from './worktree-changes.js';
import { lendWorktree, takeBackWorktree } from './worktree-lend.js';
import { agentGitconfig } from './agent-uid.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));
const NEEDS_ROOT = process.getuid?.() === 0 ? false : 'needs root: it chowns a worktree to uid 47010';
const AGENT = 47010;

async function lent() {
  chmodSync(home, 0o711);
  const { repo, base } = makeRepo(home);
  chmodSync(join(repo, '..'), 0o711);
  const worktree = await prepareWorktree({ repoPath: repo, key: 'LEND-1', epoch: 1, baseDir: base });
  const record = lendWorktree(worktree.path, worktree.branch, AGENT, AGENT);
  return { repo, base, ...worktree, record };
}

describe('a worktree lent to an agent uid', () => {
  test(
    "is the agent's while lent, shared directories group-writable; the runner looks at it with git as the agent",
    { skip: NEEDS_ROOT },
    async () => {
      const { repo, path, branch, record } = await lent();
      assert.equal(statSync(path).uid, AGENT);
      assert.equal(statSync(path).mode & 0o777, 0o700);
      assert.equal(statSync(join(path, 'README.md')).uid, AGENT);
      assert.equal(statSync(record.adminDir).uid, AGENT);
      assert.equal(statSync(join(repo, '.git', 'logs', 'refs', 'heads', branch)).uid, AGENT);
      assert.equal(statSync(join(repo, '.git', 'config')).uid, 0, 'the repository config is never lent');
      // The runner's directories exist before anything is lent, sticky: no agent swaps one for a link.
      const dotGit = join(repo, '.git');
      for (const dir of ['objects/00', 'objects/ff', 'refs/heads/baton', 'refs/remotes/origin/baton']) {
        const stat = statSync(join(dotGit, dir));
        assert.deepEqual([stat.uid, stat.gid, stat.mode & 0o3070], [0, AGENT, 0o3070], dir);
      }
      for (const dir of ['objects', 'objects/pack', 'objects/info', 'refs', 'refs/heads', 'refs/tags']) {
        const stat = statSync(join(dotGit, dir));
        assert.deepEqual([stat.uid, stat.mode & 0o022], [0, 0], `${dir}: not lent`);
      }
      const archive = statSync(join(dotGit, 'refs', 'baton', 'archive'));
      assert.deepEqual(
        [archive.uid, archive.gid, archive.mode & 0o020],
        [0, 0, 0],
        'the archive refs: never lent',
      );
      const asAgent = (...argv: string[]) =>
        spawnSync('setpriv', [`--reuid=${AGENT}`, `--regid=${AGENT}`, '--clear-groups', ...argv], {
          cwd: dotGit,
        });
      assert.notEqual(
        asAgent('mv', 'refs/heads/baton', 'refs/heads/mine').status,
        0,
        'a runner directory stays',
      );
      assert.notEqual(asAgent('ln', '-s', '/etc', 'refs/baton/x').status, 0, 'nothing is made in refs/baton');
      assert.equal(asAgent('touch', 'refs/heads/baton/agent-made').status, 0, 'its own refs it may make');
      const logs = statSync(join(repo, '.git', 'logs', 'refs', 'heads'));
      assert.deepEqual([logs.uid, logs.gid, logs.mode & 0o070], [0, 0, 0o050], "nor the reflogs' folders");
      assert.equal(statSync(join(repo, '.git', 'hooks')).gid, 0, 'nor its hooks');
      // The runner looks at it (progress marks) with git as the agent's uid: as root, git refuses it.
      writeFileSync(join(path, 'new.txt'), 'x\n');
      assert.equal(await sampleWorktree(path), null, "git's dubious-ownership check, as root");
      const as = { uid: AGENT, gid: AGENT, home: mkdtempSync(join(tmpdir(), 'baton-agent-home-')) };
      const sample = await sampleWorktree(path, as);
      assert.deepEqual([...(sample?.entries.keys() ?? [])], ['new.txt']);
    },
  );

  test(
    'comes back to the runner with the files that locate the repository as they were, whatever the agent wrote',
    { skip: NEEDS_ROOT },
    async () => {
      const { repo, path, branch, record } = await lent();
      const pointer = readFileSync(join(path, '.git'), 'utf8');
      const gitdir = readFileSync(join(record.adminDir, 'gitdir'), 'utf8');
      // What a hostile agent could leave for the runner's git: another repository, a command to run.
      writeFileSync(join(path, '.git'), 'gitdir: /tmp/evil\n');
      writeFileSync(join(record.adminDir, 'gitdir'), '/tmp/evil/.git\n');
      writeFileSync(join(record.adminDir, 'commondir'), '/tmp/evil\n');
      writeFileSync(join(record.adminDir, 'config.worktree'), '[core]\n\tfsmonitor = touch /tmp/owned\n');
      writeFileSync(join(path, 'work.txt'), 'agent\n');
      const made = join(repo, '.git', 'refs', 'heads', 'baton', 'made-by-agent');
      writeFileSync(made, `${git(repo, 'rev-parse', 'HEAD')}\n`);
      chownSync(made, AGENT, AGENT);
      takeBackWorktree(record, 0, 0);
      assert.equal(existsSync(made), false, 'a ref the agent made is gone after');
      assert.equal(readFileSync(join(path, '.git'), 'utf8'), pointer);
      assert.equal(readFileSync(join(record.adminDir, 'gitdir'), 'utf8'), gitdir);
      assert.equal(readFileSync(join(record.adminDir, 'commondir'), 'utf8'), '../..\n');
      assert.equal(existsSync(join(record.adminDir, 'config.worktree')), false);
      for (const file of [path, join(path, 'README.md'), record.adminDir, join(record.adminDir, 'HEAD')])
        assert.equal(statSync(file).uid, 0, file);
      assert.equal(statSync(path).mode & 0o777, record.mode & 0o777);
      assert.equal(statSync(join(repo, '.git', 'logs', 'refs', 'heads', branch)).uid, 0);
      assert.match(git(path, 'status', '--porcelain'), /work\.txt/, "the runner's git works in it again");
      assert.equal(
        statSync(join(repo, '.git', 'refs', 'heads', branch)).uid,
        0,
        'its branch is the runner’s',
      );
    },
  );
});

/** A shell command run as uid `uid` (group AGENT, no other), in `cwd`, with `home` as HOME. */
function asUid(uid: number, cwd: string, home: string, command: string) {
  const ids = [`--reuid=${uid}`, `--regid=${AGENT}`, '--clear-groups'];
  return spawnSync('setpriv', [...ids, '/bin/sh', '-c', command], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home },
  });
}

describe('the refs of a repository whose worktree is lent', () => {
  test(
    "the agent's uid commits and pushes its branch, and moves, makes or removes no other ref, loose or packed",
    { skip: NEEDS_ROOT },
    async () => {
      chmodSync(home, 0o711);
      const { repo, remote, base } = makeRepo(home);
      chmodSync(join(repo, '..'), 0o711);
      execFileSync('chmod', ['-R', 'a+rwX', remote]); // the remote is the agents' to push to
      const other = await prepareWorktree({ repoPath: repo, key: 'OTHER-1', epoch: 1, baseDir: base });
      git(repo, 'tag', 'v1');
      const main = git(repo, 'rev-parse', 'main');
      const refs = join(repo, '.git', 'refs');
      for (const packed of [false, true]) {
        // Then main, the other task's branch and the tag are in packed-refs only.
        if (packed) git(repo, 'pack-refs', '--all');
        const epoch = packed ? 2 : 1;
        const mine = await prepareWorktree({ repoPath: repo, key: 'LEND-1', epoch, baseDir: base });
        const record = lendWorktree(mine.path, mine.branch, AGENT, AGENT);
        const agentHome = mkdtempSync(join(tmpdir(), 'baton-agent-home-'));
        // The remote is a directory of the runner's here: the agent trusts it, as in e2e/agent-uids.
        const config = `${agentGitconfig('Agent', 'agent@example.com', mine.path)}[safe]\n\tdirectory = ${remote}\n`;
        writeFileSync(join(agentHome, '.gitconfig'), config);
        chownSync(agentHome, AGENT, AGENT);
        const run = (command: string, uid = AGENT) => asUid(uid, mine.path, agentHome, command);
        const commit = run(
          `echo ${epoch} > work.txt && git add work.txt && git commit -qm work && git push -q origin HEAD`,
        );
        assert.equal(commit.status, 0, commit.stderr);
        const work = git(repo, 'rev-parse', mine.branch);
        assert.equal(git(remote, 'rev-parse', mine.branch), work, 'its push landed');
        const tmp = join(refs, 'heads', 'baton', 'tmp');
        const attempts = [
          `rm ${join(refs, 'heads', other.branch)}`,
          `git update-ref -d refs/heads/${other.branch}`,
          `touch ${join(repo, '.git', 'objects', 'pack', 'x.pack')}`,
          `touch ${join(repo, '.git', 'objects', 'info', 'alternates')}`,
        ];
        for (const ref of ['heads/main', `heads/${other.branch}`, 'tags/v1', 'heads/new', 'tags/new']) {
          const at = join(refs, ref);
          attempts.push(`echo ${work} > ${at}`, `echo ${work} > ${tmp} && mv -f ${tmp} ${at}`);
          attempts.push(`git update-ref refs/${ref} ${work}`);
        }
        // Every attempt is made (none stops the others), then the ones that went through are named.
        const made = attempts.filter((attempt) => run(attempt).status === 0);
        assert.deepEqual(made, [], `as uid ${AGENT}, packed refs: ${packed}`);
        const another = run(`echo ${main} > ${join(refs, 'heads', mine.branch)}`, AGENT + 1);
        assert.notEqual(another.status, 0, "another agent of the group does not move this one's branch");
        assert.equal(run(`echo ${work} > ${join(refs, 'heads', 'baton', 'made')}`).status, 0);
        for (const ref of ['main', other.branch, 'v1']) assert.equal(git(repo, 'rev-parse', ref), main, ref);
        assert.equal(
          git(repo, 'rev-parse', `refs/remotes/origin/${mine.branch}`),
          work,
          'and its tracking ref',
        );
        takeBackWorktree(record, 0, 0);
        assert.equal(git(repo, 'rev-parse', mine.branch), work, 'its branch keeps its work');
        assert.equal(existsSync(join(refs, 'heads', 'baton', 'made')), false, 'what it made is gone');
        const object = join(repo, '.git', 'objects', work.slice(0, 2), work.slice(2));
        assert.equal(statSync(object).uid, 0, 'its commit is the runner’s: a later run of the uid keeps it');
        rmSync(agentHome, { recursive: true, force: true });
      }
    },
  );

  test(
    "a branch the agent's uid made for a task yet to run is refused when that task starts, and gone after",
    { skip: NEEDS_ROOT },
    async () => {
      const { repo, base, path, record } = await lent();
      const future = branchForKey('FUTURE-1');
      const at = join(repo, '.git', 'refs', 'heads', future);
      const made = asUid(AGENT, path, path, `echo ${git(repo, 'rev-parse', 'HEAD')} > ${at}`);
      assert.equal(made.status, 0, made.stderr);
      const start = () => prepareWorktree({ repoPath: repo, key: 'FUTURE-1', epoch: 1, baseDir: base });
      await assert.rejects(start(), /branch baton\/future-1-\w+ records no task and uid 47010 made it/);
      takeBackWorktree(record, 0, 0);
      assert.equal(existsSync(at), false);
      const started = await start();
      assert.equal(statSync(at).uid, 0, `${started.branch}: made by the runner`);
    },
  );
});
