/**
 * Real git repositories for tests: a repository with one commit on main, pushed to a bare
 * `origin` beside it. isolateGit() keeps git away from the machine's own configuration.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Points HOME at a new temp directory and turns off system and user git config; returns it. */
export function isolateGit(): string {
  const home = mkdtempSync(join(tmpdir(), 'baton-git-home-'));
  process.env['HOME'] = home;
  process.env['GIT_CONFIG_NOSYSTEM'] = '1';
  process.env['GIT_CONFIG_GLOBAL'] = join(home, 'gitconfig');
  // Never find a repository above the temp directory: "not a repository" must mean it.
  process.env['GIT_CEILING_DIRECTORIES'] = home;
  return home;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export interface TestRepo {
  readonly repo: string;
  readonly remote: string;
  /** Where worktrees go. */
  readonly base: string;
}

/** A repository under `parent` with one commit on main, pushed (with upstream) to a bare origin. */
export function makeRepo(parent: string): TestRepo {
  const dir = mkdtempSync(join(parent, 'case-'));
  const repo = join(dir, 'repo');
  const remote = join(dir, 'remote.git');
  git(dir, 'init', '--quiet', '--initial-branch=main', repo);
  git(repo, 'config', 'user.name', 'Test');
  git(repo, 'config', 'user.email', 'test@example.com');
  writeFileSync(join(repo, 'README.md'), 'hello\n');
  git(repo, 'add', 'README.md');
  git(repo, 'commit', '--quiet', '-m', 'first');
  git(dir, 'init', '--quiet', '--bare', remote);
  git(repo, 'remote', 'add', 'origin', remote);
  git(repo, 'push', '--quiet', '-u', 'origin', 'main');
  return { repo, remote, base: join(dir, 'worktrees') };
}

/** Writes the file, commits it and returns the commit. */
export function commitFile(cwd: string, file: string, text: string): string {
  writeFileSync(join(cwd, file), text);
  git(cwd, 'add', file);
  git(cwd, 'commit', '--quiet', '-m', `write ${file}`);
  return git(cwd, 'rev-parse', 'HEAD');
}
