/**
 * The Baton side of a Claude Code session, as its hooks see it: which task it works (BATON_KEY,
 * the task given at install, or the branch), the Baton session it acts under, and its claim.
 *
 * A session started by a runner comes with BATON_SESSION, BATON_KEY and BATON_EPOCH: the hooks
 * then only check and mark that claim, and leave it to the runner to release. Otherwise the hooks
 * start a session of their own (with a keeper process that heartbeats it while Claude Code runs,
 * and ends it if Claude Code dies), claim the task, and release it and end the session at the end.
 */
import type { Holder } from '../../core/claim.js';
import { NotFoundError } from '../../core/errors.js';
import { fencedReason } from '../../coordinator/refusals.js';
import { gitMaybe } from '../../os/git.js';
import type { ProcessIdentity } from '../../os/process-ancestry.js';
import type { AgentClient } from '../client.js';
import type { HookState } from './hook-state.js';

export interface HookContext {
  readonly client: AgentClient;
  readonly env: NodeJS.ProcessEnv;
  readonly stateDir: string;
  /** The task given at install (`--task`), if any. */
  readonly task: string | null;
  readonly host: string;
  /** The Claude Code process running this hook, when /proc tells. */
  readonly claude: ProcessIdentity | null;
  /** Starts the keeper of a session the hooks started (a detached process). */
  readonly startKeeper: (session: number, claude: ProcessIdentity | null) => void;
}

/** The config a Baton worktree's branch carries: `branch.<name>.batonKey` (os/worktree.ts). */
const BRANCH_KEY_CONFIG = 'batonKey';

/**
 * The task this Claude Code session works: BATON_KEY, else the task given at install, else the
 * key recorded on the branch Baton made for it, else the branch name if a task has that key.
 */
async function resolveKey(ctx: HookContext, cwd: string): Promise<string | null> {
  const fromEnv = ctx.env['BATON_KEY'];
  if (fromEnv) return fromEnv;
  if (ctx.task !== null) return ctx.task;
  const branch = await gitMaybe(['symbolic-ref', '--short', '-q', 'HEAD'], { cwd }).catch(() => null);
  if (branch === null || branch === '') return null;
  const recorded = await gitMaybe(['config', '--get', `branch.${branch}.${BRANCH_KEY_CONFIG}`], { cwd });
  if (recorded !== null && recorded !== '') return recorded;
  try {
    return (await ctx.client.showTask(branch)).task.key;
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/** Starts this Claude Code session's Baton side: given by the environment, or a session of its own. */
export async function setUp(ctx: HookContext, claudeSession: string, cwd: string): Promise<HookState> {
  const base = { claudeSession, claude: ctx.claude, lastTool: null, holder: null };
  const given = ctx.env['BATON_SESSION'];
  const key = await resolveKey(ctx, cwd);
  if (given) {
    const session = Number(given);
    const epoch = ctx.env['BATON_EPOCH'] ? Number(ctx.env['BATON_EPOCH']) : null;
    const state: HookState = { ...base, session, owned: false, key, epoch, status: 'holding' };
    if (key === null) return { ...state, status: 'untracked', epoch: null };
    return epoch === null ? claim(ctx, state, key) : check(ctx, state);
  }
  const untracked: HookState = { ...base, session: null, owned: true, key, epoch: null, status: 'untracked' };
  if (key === null || !(await taskExists(ctx, key))) return untracked;
  const started = await ctx.client.startSession({
    kind: 'agent',
    name: `claude-code ${claudeSession.slice(0, 8)}`,
    host: ctx.host,
    pid: ctx.claude?.pid ?? process.ppid,
  });
  ctx.startKeeper(started.id, ctx.claude);
  return claim(ctx, { ...base, session: started.id, owned: true, key, epoch: null, status: 'held' }, key);
}

/** Claims the state's task for its session: `holding`, or `held` with the holder. */
export async function claim(ctx: HookContext, state: HookState, key: string): Promise<HookState> {
  const session = state.session ?? 0;
  let outcome;
  try {
    outcome = await ctx.client.claim({ key, session });
  } catch (error) {
    // A task Baton does not know is not guarded: say so once, at the start.
    if (error instanceof NotFoundError && error.entity === 'task')
      return { ...state, key, status: 'untracked' };
    throw error;
  }
  if (!outcome.ok) return { ...state, key, epoch: null, status: 'held', holder: outcome.holder };
  return { ...state, key, epoch: outcome.claim.epoch, status: 'holding', holder: null };
}

/** Whether the state's claim is still current (a heartbeat with the claim); `fenced` with the holder if not. */
export async function check(ctx: HookContext, state: HookState): Promise<HookState> {
  if (state.status !== 'holding' || state.session === null || state.key === null || state.epoch === null) {
    return state;
  }
  const claimRef = { key: state.key, epoch: state.epoch };
  const result = await ctx.client.heartbeat({ session: state.session, claim: claimRef });
  if (result.ok) return state;
  return { ...state, status: 'fenced', holder: result.current ?? (await currentHolder(ctx, state.key)) };
}

async function taskExists(ctx: HookContext, key: string): Promise<boolean> {
  try {
    await ctx.client.showTask(key);
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

export async function currentHolder(ctx: HookContext, key: string): Promise<Holder | null> {
  return (await ctx.client.showTask(key)).holder;
}

/** Whether the state's Baton session has ended (or was rescued): its claims went with it. */
export async function sessionGone(ctx: HookContext, state: HookState): Promise<boolean> {
  if (state.session === null) return false;
  return (await ctx.client.getSession(state.session)).state !== 'live';
}

/** The end of this Claude Code session's own Baton side: release the claim, end the session. */
export async function tearDown(
  ctx: HookContext,
  state: HookState,
): Promise<{ readonly state: HookState; readonly problem: string | null }> {
  if (!state.owned || state.session === null) return { state, problem: null };
  const problem =
    state.status === 'holding' && state.key !== null && state.epoch !== null
      ? await releaseProblem(ctx, state.session, state.key, state.epoch)
      : null;
  // Ended whatever the release said: a session left live would hold nothing but keep beating.
  await ctx.client.endSession(state.session);
  return { state: { ...state, session: null, epoch: null, status: 'released', holder: null }, problem };
}

/** Releases the claim; what went wrong, in words for the user (fenced off, or failed), else null. */
async function releaseProblem(
  ctx: HookContext,
  session: number,
  key: string,
  epoch: number,
): Promise<string | null> {
  try {
    const released = await ctx.client.release({ key, epoch, session, outcome: 'released' });
    if (released.ok) return null;
    const why = fencedReason(key, epoch, released.current, released.sessionEnded === true);
    return `the release of ${key} was refused: ${why}`;
  } catch (error) {
    return `the release of ${key} at epoch ${epoch} failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}
