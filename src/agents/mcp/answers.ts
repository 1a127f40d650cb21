/**
 * The shapes every MCP tool answers with (tools.ts): a result the model reads (`message`) beside
 * structured content, a refusal as a tool error carrying its hint, and the `fenced` answer of a
 * claim, or a whole session, that is no longer current.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Holder } from '../../core/claim.js';
import { BatonError, FencedError } from '../../core/errors.js';
import type { SessionId } from '../../core/session.js';
import type { AgentClient, ClaimRef } from '../client.js';
import { fencedMessage } from '../messages.js';
import { callersOwn } from '../../coordinator/refusals.js';
import type { ToolName } from './descriptions.js';
import type { McpSession } from './session.js';

export interface ToolContext {
  readonly client: AgentClient;
  readonly session: McpSession;
}

export const iso = (ms: number): string => new Date(ms).toISOString();

export const wireHolder = (holder: Holder | null) =>
  holder === null ? null : { ...holder, since: iso(holder.since) };

export function answer(structured: Record<string, unknown> & { message: string }): CallToolResult {
  return { content: [{ type: 'text', text: structured.message }], structuredContent: structured };
}

/** A refusal as a tool error the model can act on: what was wrong, then the hint. */
export function toolError(error: BatonError): CallToolResult {
  const text = error.hint ? `${error.message} — ${error.hint}` : error.message;
  return { content: [{ type: 'text', text }], isError: true };
}

/** Counts the call as progress of the session; a session that ended shows in the tool's own step. */
export const markCall = (ctx: ToolContext, sid: SessionId, tool: ToolName): Promise<boolean> =>
  ctx.client.markToolCalls({ session: sid, count: 1, note: `mcp ${tool}` }).catch(() => false);

/** Runs a handler, turning refusals into tool errors and a session that ended into `fenced`. */
export function guarded<Args>(
  fenced: (args: Args) => CallToolResult,
  work: (args: Args) => Promise<CallToolResult>,
) {
  return async (args: Args): Promise<CallToolResult> => {
    try {
      return await work(args);
    } catch (error) {
      if (error instanceof FencedError) return fenced(args);
      if (error instanceof BatonError) return toolError(error);
      throw error;
    }
  };
}

/** ok:false for a claim (key, epoch) that is not current, saying whether the session itself ended. */
async function fencedAnswer(
  ctx: ToolContext,
  { key, epoch }: ClaimRef,
  fenced: Fenced,
): Promise<CallToolResult> {
  // A heartbeat or a release says whether its session ended (a release from an older `baton serve`
  // does not), an effect does not: ask. A holder not named is looked up (an older `baton serve`
  // named none for the heartbeat of an ended session).
  const holder = fenced.current ?? (await ctx.client.showTask(key)).holder;
  const sid = ctx.session.current;
  const live =
    fenced.sessionEnded !== true && (sid === null || (await ctx.client.getSession(sid)).state === 'live');
  const ended = live ? undefined : ('session_ended' as const);
  // The session's own claim below an epoch the model made up: told the epoch, not to stop.
  const own = ended === undefined && callersOwn(holder, sid, epoch) !== null;
  return answer({
    ok: false,
    key,
    session: ctx.session.current,
    epoch,
    reason: own ? 'wrong_epoch' : 'fenced',
    holder: wireHolder(holder),
    message: fencedMessage(key, epoch, holder, ended, sid),
  });
}

/** The session itself ended: every claim under it is gone. */
export function sessionGone(ctx: ToolContext, key: string, epoch: number | undefined): CallToolResult {
  return answer({
    ok: false,
    key,
    session: ctx.session.current,
    ...(epoch === undefined ? {} : { epoch }),
    reason: 'fenced',
    holder: null,
    message: fencedMessage(key, epoch ?? ctx.session.claims.get(key) ?? 0, null, 'session_ended'),
  });
}

/** A step on a claim that was fenced: who holds the task now, and whether the session itself ended. */
type Fenced = { readonly ok: false; readonly current: Holder | null; readonly sessionEnded?: true };

/** What a step on a claim gives back: done, or fenced. */
type Fenceable<Done> = Done | Fenced;

interface HeldClaimStep<Args extends ClaimRef, Done extends { readonly ok: true }> {
  /** The step, under the session (started on first use). */
  readonly step: (args: Args, sid: SessionId) => Promise<Fenceable<Done>>;
  /** The words (and any fields) of the ok answer. */
  readonly reply: (args: Args, done: Done) => Record<string, unknown> & { message: string };
  /** The tool to count as progress of the session, if it counts. */
  readonly mark?: ToolName;
  /** Whether the claim ends with the step (release, escalate): the session forgets it. */
  readonly ends?: boolean | ((done: Done) => boolean);
}

/**
 * The handler of a tool that acts on a claim the model holds (key, epoch): ok with the step's
 * words while the claim is current, `fenced` once it is not, or once the session itself ended.
 */
export function onHeldClaim<Args extends ClaimRef, Done extends { readonly ok: true }>(
  ctx: ToolContext,
  { step, reply, mark, ends }: HeldClaimStep<Args, Done>,
) {
  return guarded(
    (args: Args) => sessionGone(ctx, args.key, args.epoch),
    async (args: Args) => {
      const sid = await ctx.session.use();
      const outcome = await step(args, sid);
      if (mark !== undefined) await markCall(ctx, sid, mark);
      if (!outcome.ok) return fencedAnswer(ctx, args, outcome);
      if (ends === true || (typeof ends === 'function' && ends(outcome))) ctx.session.claims.delete(args.key);
      return answer({ ok: true, key: args.key, session: sid, epoch: args.epoch, ...reply(args, outcome) });
    },
  );
}
