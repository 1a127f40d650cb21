/**
 * What the hooks of one Claude Code session remember between their processes: the Baton session
 * they act under, the task and the claim, and what the last check found. One small JSON file per
 * Claude Code session id, under BATON_HOOK_STATE_DIR, else `$XDG_RUNTIME_DIR/baton-claude-hooks`,
 * else `baton-claude-hooks-<uid>` in the temp directory (never in the project, where it would count
 * as a changed file), written whole by rename so a reader never sees half.
 *
 * The state says which Baton session the Stop hook ends, so whoever may write the folder may make
 * the hooks end any session with this user's credentials. In a shared /tmp another local user could
 * make the folder first (or plant a symlink in it): the folder is used only when it is a directory
 * (not a symlink) owned by this uid that neither group nor others may write, else every read and
 * write refuses (InvalidInputError: the hook exits 1, or 2 for a PreToolUse guarding a claim),
 * naming the folder to remove. Temp files get a random name and are created with O_EXCL ('wx'),
 * the state file is opened with O_NOFOLLOW: neither follows a symlink.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { Holder } from '../../core/claim.js';
import type { ProcessIdentity } from '../../os/process-ancestry.js';
import { ownPrivateDir } from '../../os/private-state.js';

/**
 * - `holding`: the claim (key, epoch) was current at the last look;
 * - `held`: the task was held by someone else when last asked (the holder);
 * - `fenced`: the claim this session had was found gone; edits stay blocked;
 * - `released`: released by this session's own Stop hook: the next tool use claims again;
 * - `untracked`: no task: the hooks record progress and block nothing.
 */
export type HookStatus = 'holding' | 'held' | 'fenced' | 'released' | 'untracked';

export interface HookState {
  readonly claudeSession: string;
  /** The Baton session, or null after this session's Stop ended it. */
  readonly session: number | null;
  /** Whether the hooks started that session (and end it), or were given it (BATON_SESSION). */
  readonly owned: boolean;
  readonly key: string | null;
  readonly epoch: number | null;
  readonly status: HookStatus;
  readonly holder: Holder | null;
  /** The Claude Code process the session's keeper watches. */
  readonly claude: ProcessIdentity | null;
  /** A digest of the last tool call: the same call repeated is not progress. */
  readonly lastTool: string | null;
}

export function stateDir(env: NodeJS.ProcessEnv): string {
  const dir = env['BATON_HOOK_STATE_DIR'];
  if (dir) return dir;
  const runtime = env['XDG_RUNTIME_DIR'];
  return runtime
    ? join(runtime, 'baton-claude-hooks')
    : join(tmpdir(), `baton-claude-hooks-${userInfo().uid}`);
}

/** Makes `dir` if need be; throws unless it is a directory of this uid that only it may write. */
function ownDir(dir: string): string {
  return ownPrivateDir(
    dir,
    "the hooks' state folder",
    ', or set BATON_HOOK_STATE_DIR to a folder of your own',
  );
}

function stateFile(dir: string, claudeSession: string): string {
  return join(dir, `${claudeSession}.json`);
}

export function readState(dir: string, claudeSession: string): HookState | null {
  const file = stateFile(ownDir(dir), claudeSession);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    return JSON.parse(readFileSync(fd, 'utf8')) as HookState;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

export function writeState(dir: string, state: HookState): void {
  const file = stateFile(ownDir(dir), state.claudeSession);
  const tmp = `${file}.${randomBytes(8).toString('hex')}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(tmp, file);
}

export function removeState(dir: string, claudeSession: string): void {
  rmSync(stateFile(ownDir(dir), claudeSession), { force: true });
}
