/**
 * What the hooks of one Claude Code session remember between their processes: the Baton session
 * they act under, the task and the claim, and what the last check found. One small JSON file per
 * Claude Code session id, under BATON_HOOK_STATE_DIR or the temp directory (never in the project,
 * where it would count as a changed file), written whole by rename so a reader never sees half.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { Holder } from '../../core/claim.js';
import type { ProcessIdentity } from '../../os/process-ancestry.js';

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
  return dir ? dir : join(tmpdir(), `baton-claude-hooks-${userInfo().uid}`);
}

function stateFile(dir: string, claudeSession: string): string {
  return join(dir, `${claudeSession}.json`);
}

export function readState(dir: string, claudeSession: string): HookState | null {
  try {
    return JSON.parse(readFileSync(stateFile(dir, claudeSession), 'utf8')) as HookState;
  } catch {
    return null;
  }
}

export function writeState(dir: string, state: HookState): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = stateFile(dir, state.claudeSession);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

export function removeState(dir: string, claudeSession: string): void {
  rmSync(stateFile(dir, claudeSession), { force: true });
}
