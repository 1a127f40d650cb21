/**
 * Commit provenance: a git commit-msg hook that stamps every commit made under a claim with the
 * trailers Baton-Task, Baton-Session, Baton-Epoch and Baton-Host. The hook is plain sh and git (no
 * Node, no database, no credentials): it reads BATON_KEY, BATON_SESSION, BATON_EPOCH and
 * BATON_HOST, which the runner gives its agents, else the trailers `baton guard install` wrote
 * into the worktree's own git directory. A checkout with neither is not stamped. `baton audit
 * commits` later checks each stamp against the ledger (commit-audit.ts).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeHookFile } from '../os/hook-file.js';
import { join, resolve } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { git, gitDirOf } from '../os/git.js';

/** The per-worktree trailers, in the directory `git rev-parse --git-dir` names. */
const TRAILERS_FILE = 'baton-trailers';
/** The line that marks a commit-msg hook as Baton's, so it may be replaced. */
const TRAILER_HOOK_MARKER = '# baton-trailers:';

export interface CommitStamp {
  readonly key: string;
  readonly session: number;
  readonly epoch: number;
  readonly host: string;
}

export const TRAILER_KEYS = ['Baton-Task', 'Baton-Session', 'Baton-Epoch', 'Baton-Host'] as const;

function trailerLines(stamp: CommitStamp): string[] {
  return [
    `Baton-Task: ${stamp.key}`,
    `Baton-Session: ${stamp.session}`,
    `Baton-Epoch: ${stamp.epoch}`,
    `Baton-Host: ${stamp.host}`,
  ];
}

function commitMsgHook(): string {
  return `#!/bin/sh
${TRAILER_HOOK_MARKER} installed by \`baton guard install\`. Stamps each commit made under a claim
# with Baton-Task, Baton-Session, Baton-Epoch and Baton-Host (\`baton audit commits\` checks them),
# from BATON_KEY/BATON_SESSION/BATON_EPOCH/BATON_HOST, else from ${TRAILERS_FILE} in the worktree's
# git directory. A checkout with neither is not stamped. No database, no credentials.
msg="$1"
if [ -n "$BATON_KEY" ] && [ -n "$BATON_SESSION" ] && [ -n "$BATON_EPOCH" ]; then
  exec git interpret-trailers --in-place --if-exists replace \\
    --trailer "Baton-Task: $BATON_KEY" --trailer "Baton-Session: $BATON_SESSION" \\
    --trailer "Baton-Epoch: $BATON_EPOCH" --trailer "Baton-Host: \${BATON_HOST:-$(uname -n)}" "$msg"
fi
file="$(git rev-parse --git-dir)/${TRAILERS_FILE}"
[ -f "$file" ] || exit 0
set --
while IFS= read -r line; do
  [ -n "$line" ] && set -- "$@" --trailer "$line"
done < "$file"
exec git interpret-trailers --in-place --if-exists replace "$@" "$msg"
`;
}

export interface TrailerInstallResult {
  readonly hook: string;
  readonly trailersFile: string;
  readonly created: boolean;
}

/**
 * Records the stamp in the worktree's git directory and writes the commit-msg hook into the hooks
 * directory git uses for it. Refuses to replace a commit-msg hook that is not Baton's.
 */
export async function installCommitTrailers(dir: string, stamp: CommitStamp): Promise<TrailerInstallResult> {
  const at = resolve(dir);
  const gitDir = await gitDirOf(at, 'worktree');
  const hooks = resolve(at, await git(['rev-parse', '--git-path', 'hooks'], { cwd: at }));
  mkdirSync(hooks, { recursive: true });
  const hook = join(hooks, 'commit-msg');
  const existing = existsSync(hook) ? readFileSync(hook, 'utf8') : null;
  if (existing !== null && !existing.includes(TRAILER_HOOK_MARKER)) {
    throw new ConflictError(
      `${hook} exists and is not Baton's`,
      `make it add these trailers: ${TRAILER_KEYS.join(', ')} (see \`git interpret-trailers\`)`,
    );
  }
  const trailersFile = join(gitDir, TRAILERS_FILE);
  writeFileSync(trailersFile, `${trailerLines(stamp).join('\n')}\n`, { mode: 0o644 });
  writeHookFile(hook, commitMsgHook());
  return { hook, trailersFile, created: existing === null };
}
