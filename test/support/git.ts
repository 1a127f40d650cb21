/**
 * Real git repositories for tests: a repository with one commit on main, pushed to a bare
 * `origin` beside it. isolateGit() keeps git away from the machine's own configuration.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** The template makeRepo copies, made once per test process (below), and its origin's path. */
let template: { readonly dir: string; readonly remote: string } | null = null;

/** A repository with one commit on main, pushed (with upstream) to a bare origin, in `dir`. */
function buildRepo(dir: string): { repo: string; remote: string } {
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
  return { repo, remote };
}

/**
 * A repository under `parent` with one commit on main, pushed (with upstream) to a bare origin.
 * The eight git calls that make one took about 2 s on the loaded 2-core machine (a push alone
 * 0.7 s), so the first call of a test process makes a template and every call copies it: the
 * files git made, with the copy's own origin path in its config. Each case still owns its
 * repository and its origin; git re-reads the copied index's stale stat data as it would after a
 * checkout elsewhere. The template goes when the process exits.
 */
export function makeRepo(parent: string): TestRepo {
  if (template === null) {
    const dir = mkdtempSync(join(tmpdir(), 'baton-git-template-'));
    template = { dir, remote: buildRepo(dir).remote };
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  const dir = mkdtempSync(join(parent, 'case-'));
  const repo = join(dir, 'repo');
  const remote = join(dir, 'remote.git');
  cpSync(join(template.dir, 'repo'), repo, { recursive: true });
  cpSync(template.remote, remote, { recursive: true });
  const config = join(repo, '.git', 'config');
  const text = readFileSync(config, 'utf8');
  assert.ok(text.includes(`url = ${template.remote}\n`), 'the template names its origin');
  writeFileSync(config, text.replace(`url = ${template.remote}\n`, `url = ${remote}\n`));
  return { repo, remote, base: join(dir, 'worktrees') };
}

/** Writes the file, commits it and returns the commit. */
export function commitFile(cwd: string, file: string, text: string): string {
  writeFileSync(join(cwd, file), text);
  git(cwd, 'add', file);
  git(cwd, 'commit', '--quiet', '-m', `write ${file}`);
  return git(cwd, 'rev-parse', 'HEAD');
}
