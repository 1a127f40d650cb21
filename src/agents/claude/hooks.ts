/**
 * Baton's Claude Code hooks, one handler per event, answering in Claude Code's hook contract:
 *
 * - SessionStart sets up the Baton side (hook-session.ts) and claims the task; it answers with
 *   additionalContext saying what the session holds, or that the task is held elsewhere and to stop.
 * - PreToolUse checks the claim against the database, with no cache: exit 0 allows the tool, exit 2
 *   blocks it with the reason on stderr (who holds the task now, and what to do).
 * - PostToolUse records a progress mark (a tool call; the same call repeated is not one) and a
 *   heartbeat; when it finds the claim fenced, it answers decision block with the reason.
 * - Stop releases the claim and ends the session the hooks started; SessionEnd does the same and
 *   forgets the Claude Code session. A runner's session and claim are left to the runner.
 *
 * PreToolUse fails closed: when the claim cannot be checked (the database is away), the edit is
 * blocked, since the claim may be gone. Without a task, nothing is blocked.
 */
import { createHash } from 'node:crypto';
import { BatonError } from '../../core/errors.js';
import { fencedMessage, heldAtStartMessage, heldMessage } from '../messages.js';
import type { HookCommand, HookInput } from './hook-input.js';
import {
  check,
  claim,
  currentHolder,
  sessionGone,
  setUp,
  tearDown,
  type HookContext,
} from './hook-session.js';
import { readState, removeState, writeState, type HookState } from './hook-state.js';

export interface HookOutcome {
  /** 0: go on; 2: block (PreToolUse); 1: a non-blocking error shown to the user. */
  readonly exitCode: 0 | 1 | 2;
  readonly stdout?: string;
  readonly stderr?: string;
}

const ALLOW: HookOutcome = { exitCode: 0 };

export async function runHook(
  command: HookCommand,
  input: HookInput,
  ctx: HookContext,
): Promise<HookOutcome> {
  switch (command) {
    case 'session-start':
      return sessionStart(input, ctx);
    case 'pre-tool':
      return preTool(input, ctx);
    case 'post-tool':
      return postTool(input, ctx);
    case 'stop':
      return stop(input, ctx, false);
    case 'session-end':
      return stop(input, ctx, true);
  }
}

async function sessionStart(input: HookInput, ctx: HookContext): Promise<HookOutcome> {
  // A resumed, cleared or compacted session keeps its Baton side, judged afresh.
  const state = await currentState(ctx, input, readState(ctx.stateDir, input.sessionId));
  writeState(ctx.stateDir, state);
  const context = await startContext(ctx, state);
  if (context === null) return ALLOW;
  const output = { hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: context } };
  return { exitCode: 0, stdout: `${JSON.stringify(output)}\n` };
}

async function startContext(ctx: HookContext, state: HookState): Promise<string | null> {
  const { key, epoch } = state;
  if (key === null) return null;
  switch (state.status) {
    case 'holding':
      return (
        `Baton: this session holds ${key} (epoch ${epoch ?? '?'}, Baton session ${state.session ?? '?'}). ` +
        'Edits and shell commands are checked against that claim; if Baton blocks one, stop working on ' +
        `${key} and tell the user.`
      );
    case 'held':
      return state.holder === null ? null : heldAtStartMessage(key, state.holder);
    case 'fenced':
      return fencedMessage(
        key,
        epoch ?? 0,
        state.holder,
        (await sessionGone(ctx, state)) ? 'session_ended' : undefined,
      );
    case 'untracked':
      return `Baton: task ${key} is not in Baton, so nothing is claimed and edits are not guarded.`;
    case 'released':
      return null;
  }
}

async function preTool(input: HookInput, ctx: HookContext): Promise<HookOutcome> {
  let state = readState(ctx.stateDir, input.sessionId);
  try {
    state = await currentState(ctx, input, state);
    writeState(ctx.stateDir, state);
  } catch (error) {
    const key = state?.key ?? ctx.env['BATON_KEY'] ?? ctx.task;
    if (!key) return ALLOW;
    const why =
      error instanceof BatonError && error.hint ? `${error.message} — ${error.hint}` : String(error);
    const message =
      `Baton: cannot check the claim on ${key} (${why}). Not editing until it can: ` +
      'stop, and tell the user that Baton cannot be reached.';
    return block(message);
  }
  const { key } = state;
  if (key === null) return ALLOW;
  switch (state.status) {
    case 'holding':
    case 'untracked':
      return ALLOW;
    case 'held': {
      const holder = state.holder ?? (await currentHolder(ctx, key));
      if (holder !== null) return block(heldMessage(key, holder));
      return block(`Baton: ${key} could not be claimed for this session. Stop, and tell the user.`);
    }
    case 'fenced':
    case 'released': {
      const gone = (await sessionGone(ctx, state)) ? 'session_ended' : undefined;
      return block(fencedMessage(key, state.epoch ?? 0, await currentHolder(ctx, key), gone));
    }
  }
}

/** The state a tool use is judged on: set up if missing, claimed again if it was waiting, else checked. */
async function currentState(ctx: HookContext, input: HookInput, state: HookState | null): Promise<HookState> {
  if (state === null || state.status === 'released') return setUp(ctx, input.sessionId, input.cwd);
  if (state.status === 'untracked') {
    const fresh = await setUp(ctx, input.sessionId, input.cwd);
    return fresh.key === null ? { ...state, key: null } : fresh;
  }
  if (state.status === 'held' && state.key !== null) return claim(ctx, state, state.key);
  return check(ctx, state);
}

async function postTool(input: HookInput, ctx: HookContext): Promise<HookOutcome> {
  const state = readState(ctx.stateDir, input.sessionId);
  if (state === null || state.session === null) return ALLOW;
  const digest = createHash('sha256')
    .update(`${input.toolName ?? ''}\0${JSON.stringify(input.toolInput)}`)
    .digest('hex')
    .slice(0, 16);
  try {
    // The same call again (a loop retrying one failing command) is not progress.
    if (digest !== state.lastTool) {
      const note = `tool ${input.toolName ?? '?'}`;
      await ctx.client.markToolCalls({ session: state.session, count: 1, note });
    }
    const after = state.status === 'holding' ? await check(ctx, state) : state;
    if (after.status !== 'holding') await ctx.client.heartbeat({ session: state.session });
    writeState(ctx.stateDir, { ...after, lastTool: digest });
    if (state.status === 'holding' && after.status === 'fenced' && after.key !== null) {
      const gone = (await sessionGone(ctx, after)) ? 'session_ended' : undefined;
      const reason = fencedMessage(after.key, after.epoch ?? 0, after.holder, gone);
      return { exitCode: 0, stdout: `${JSON.stringify({ decision: 'block', reason })}\n` };
    }
    return ALLOW;
  } catch (error) {
    return {
      exitCode: 1,
      stderr: `baton hook post-tool: ${error instanceof Error ? error.message : String(error)}\n`,
    };
  }
}

/**
 * Stop and SessionEnd: release and end what the hooks started; a runner's session is left to it.
 * A release fenced off or failed is told to the user as a non-blocking error (exit 1), as
 * post-tool tells its failures: the session is ended all the same.
 */
async function stop(input: HookInput, ctx: HookContext, forget: boolean): Promise<HookOutcome> {
  const state = readState(ctx.stateDir, input.sessionId);
  if (state === null) return ALLOW;
  const { state: after, problem } = await tearDown(ctx, state);
  if (forget) removeState(ctx.stateDir, input.sessionId);
  else writeState(ctx.stateDir, after);
  if (problem === null) return ALLOW;
  return { exitCode: 1, stderr: `baton hook ${forget ? 'session-end' : 'stop'}: ${problem}\n` };
}

function block(message: string): HookOutcome {
  return { exitCode: 2, stderr: `${message}\n` };
}
