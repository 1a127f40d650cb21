/**
 * The push options an agent's git sends to Baton's enforcing guard (coordinator/guard-server.ts),
 * given through its environment so that no secret is ever on a command line.
 *
 * `git push -o baton-token="$BATON_TOKEN"` puts the token in git's argv, and every user of the
 * machine reads argv from /proc/<pid>/cmdline: with `--agent-uids`, a sibling agent of another uid
 * read a token that way and acted as its run. An environment is readable only by its own uid
 * (/proc/<pid>/environ), where the agent's BATON_TOKEN already is, so the runner gives the agent's
 * git `push.pushOption` values as config variables (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n>,
 * GIT_CONFIG_VALUE_<n>; git >= 2.31): a plain `git push` then sends the token and names the claim
 * (key, epoch, session). Rejected alternatives: a `[push]` section in the agent's .gitconfig works
 * only under --agent-uids (without it the agent's HOME is the runner's); `git -c` is argv again.
 *
 * Only for a workspace with a guarded remote: git refuses a whole push with push options to a
 * remote that does not take them ("the receiving end does not support push options", every plain
 * bare repository), and a remote that takes them would be handed the token. git has no per-remote
 * push option, so "guarded" means the workspace has a remote that is a local repository with the
 * guard installed (its baton-guard.json); a push from that workspace to another remote then
 * carries them too. A guard on another machine is not seen: the agent exports the same variables
 * itself (docs/security.md). Options given with `-o` on git's command line replace these.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SERVER_CONFIG_FILE } from '../coordinator/guard-server.js';
import { git } from '../os/git.js';

/** Where a remote URL points on this machine, or null for one on another (ssh, https, host:path). */
function localPath(url: string, cwd: string): string | null {
  if (url.startsWith('file://')) return decodeURIComponent(url.slice('file://'.length));
  if (url.includes('://') || /^[^/]+:/.test(url)) return null;
  return resolve(cwd, url);
}

/** Whether `path` (or `path.git`, as git tries it) is a repository with Baton's server guard. */
function guarded(path: string): boolean {
  return [path, `${path}.git`].some((dir) => existsSync(join(dir, SERVER_CONFIG_FILE)));
}

/**
 * Whether a remote of the repository at `cwd` pushes only to local repositories with Baton's
 * server guard: its push URLs (`remote.<name>.pushurl`, where git pushes when one is set), else
 * its URLs. A remote fetched from a guarded repository and pushed to a host is not guarded.
 */
export async function hasGuardedRemote(cwd: string): Promise<boolean> {
  // A run with no workspace (its cwd no repository or worktree of its own) starts no git: an
  // agent's start is on the clock (issue 22's agentStartMs).
  if (!existsSync(join(cwd, '.git'))) return false;
  // As the runner (root under --agent-uids) in a worktree lent to another uid: git would refuse
  // it as of dubious ownership. Reading the config runs nothing of the repository's.
  const text = await git(
    ['-c', 'safe.directory=*', 'config', '--get-regexp', '^remote\\..*\\.(url|pushurl)$'],
    { cwd },
  ).catch(() => '');
  const remotes = new Map<string, { urls: string[]; pushUrls: string[] }>();
  for (const line of text.split('\n')) {
    const match = /^remote\.(.+)\.(url|pushurl) (.*)$/.exec(line.trim());
    if (match === null) continue;
    const [, name = '', kind, url = ''] = match;
    const remote = remotes.get(name) ?? { urls: [], pushUrls: [] };
    (kind === 'pushurl' ? remote.pushUrls : remote.urls).push(url.trim());
    remotes.set(name, remote);
  }
  return [...remotes.values()].some(({ urls, pushUrls }) => {
    const targets = pushUrls.length > 0 ? pushUrls : urls;
    return (
      targets.length > 0 &&
      targets.every((url) => {
        const path = url === '' ? null : localPath(url, cwd);
        return path !== null && guarded(path);
      })
    );
  });
}

/**
 * `env` with each of `options` added as a `push.pushOption` config variable, after any config
 * variables it holds already (an operator's, passed with --agent-env GIT_CONFIG_*). A count git
 * would refuse ("bogus count") is replaced: git would fail every command with it anyway.
 */
export function withPushOptions(
  env: Readonly<Record<string, string>>,
  options: readonly string[],
): Record<string, string> {
  if (options.length === 0) return { ...env };
  const given = env['GIT_CONFIG_COUNT'] ?? '';
  const start = /^\d{1,6}$/.test(given) ? Number(given) : 0;
  const out: Record<string, string> = { ...env, GIT_CONFIG_COUNT: String(start + options.length) };
  options.forEach((option, index) => {
    out[`GIT_CONFIG_KEY_${start + index}`] = 'push.pushOption';
    out[`GIT_CONFIG_VALUE_${start + index}`] = option;
  });
  return out;
}

/** The push options naming an agent's claim, and its token when it has one. */
export function guardPushOptions(claim: {
  readonly key: string;
  readonly epoch: number;
  readonly session: number;
  readonly token?: string | undefined;
}): string[] {
  const options = [`baton-key=${claim.key}`, `baton-epoch=${claim.epoch}`, `baton-session=${claim.session}`];
  return claim.token === undefined ? options : [...options, `baton-token=${claim.token}`];
}
