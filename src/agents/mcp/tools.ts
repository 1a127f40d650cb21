/**
 * Baton's MCP tools, written for a model: each description says when to call the tool and what
 * to do on each outcome. Held and fenced are results (ok: false, who holds the task now, and the
 * words of messages.ts telling the model to stop); bad arguments and refusals are tool errors
 * carrying the hint. The tools speak to Baton only through the AgentClient port.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FencedResult, Holder } from '../../core/claim.js';
import { BatonError, FencedError } from '../../core/errors.js';
import type { AgentClient } from '../client.js';
import { fencedMessage, heldMessage } from '../messages.js';
import { TOOL_DESCRIPTIONS, type ToolName } from './descriptions.js';
import * as s from './schemas.js';
import type { McpSession } from './session.js';

export interface ToolContext {
  readonly client: AgentClient;
  readonly session: McpSession;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const wireHolder = (h: Holder | null) => (h === null ? null : { ...h, since: iso(h.since) });

function answer(structured: Record<string, unknown> & { message: string }): CallToolResult {
  return { content: [{ type: 'text', text: structured.message }], structuredContent: structured };
}

/** A refusal as a tool error the model can act on: what was wrong, then the hint. */
function toolError(error: BatonError): CallToolResult {
  const text = error.hint ? `${error.message} — ${error.hint}` : error.message;
  return { content: [{ type: 'text', text }], isError: true };
}

/** Runs a handler, turning refusals into tool errors and a session that ended into `fenced`. */
function guarded<A>(
  ctx: ToolContext,
  fenced: (a: A) => CallToolResult,
  work: (a: A) => Promise<CallToolResult>,
) {
  return async (args: A): Promise<CallToolResult> => {
    try {
      return await work(args);
    } catch (error) {
      if (error instanceof FencedError) return fenced(args);
      if (error instanceof BatonError) return toolError(error);
      throw error;
    }
  };
}

/** ok:false for a claim (key, epoch) that is no longer current, saying whether the session itself ended. */
async function fencedAnswer(
  ctx: ToolContext,
  key: string,
  epoch: number,
  r: FencedResult,
): Promise<CallToolResult> {
  // A fenced heartbeat of a session that is no longer live does not look at the task: ask it.
  const holder = (r.ok ? null : r.current) ?? (await ctx.client.showTask(key)).holder;
  const sid = ctx.session.current;
  const live = sid === null ? true : (await ctx.client.getSession(sid)).state === 'live';
  const ended = live ? undefined : ('session_ended' as const);
  return answer({
    ok: false,
    key,
    session: ctx.session.current,
    epoch,
    reason: 'fenced',
    holder: wireHolder(holder),
    message: fencedMessage(key, epoch, holder, ended),
  });
}

/** The session itself ended: every claim under it is gone. */
function sessionGone(ctx: ToolContext, key: string, epoch: number | undefined): CallToolResult {
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

export function registerTools(server: McpServer, ctx: ToolContext): void {
  const { client, session } = ctx;
  const mark = (sid: number, tool: ToolName) =>
    client.markToolCalls({ session: sid, count: 1, note: `mcp ${tool}` }).catch(() => false);
  const annotations = (readOnlyHint: boolean) => ({ readOnlyHint, openWorldHint: false });

  server.registerTool(
    'baton_claim',
    {
      description: TOOL_DESCRIPTIONS.baton_claim,
      inputSchema: s.claimInput,
      outputSchema: s.claimOutput,
      annotations: { ...annotations(false), idempotentHint: true },
    },
    guarded(
      ctx,
      (a) => sessionGone(ctx, a.key, undefined),
      async ({ key }) =>
        session.run(async (sid) => {
          const r = await client.claim({ key, session: sid });
          await mark(sid, 'baton_claim');
          if (!r.ok) {
            const holder = wireHolder(r.holder);
            return answer({
              ok: false,
              key,
              session: sid,
              reason: 'held',
              holder,
              message: heldMessage(key, r.holder),
            });
          }
          session.claims.set(key, r.claim.epoch);
          const again = r.granted ? '' : ' (you held it already)';
          const message =
            `Claimed ${key} at epoch ${r.claim.epoch}${again}. Work on it; call baton_heartbeat before ` +
            'each change and baton_release when done.';
          return answer({ ok: true, key, session: sid, epoch: r.claim.epoch, granted: r.granted, message });
        }),
    ),
  );

  server.registerTool(
    'baton_heartbeat',
    {
      description: TOOL_DESCRIPTIONS.baton_heartbeat,
      inputSchema: s.claimRefInput,
      outputSchema: s.claimOutput,
      annotations: annotations(false),
    },
    guarded(
      ctx,
      (a) => sessionGone(ctx, a.key, a.epoch),
      async ({ key, epoch }) => {
        const sid = await session.use();
        const r = await client.heartbeat({ session: sid, claim: { key, epoch } });
        if (!r.ok) return fencedAnswer(ctx, key, epoch, r);
        return answer({
          ok: true,
          key,
          session: sid,
          epoch,
          message: `Your claim on ${key} at epoch ${epoch} is current: carry on.`,
        });
      },
    ),
  );

  server.registerTool(
    'baton_release',
    {
      description: TOOL_DESCRIPTIONS.baton_release,
      inputSchema: s.releaseInput,
      outputSchema: s.claimOutput,
      annotations: { ...annotations(false), destructiveHint: true },
    },
    guarded(
      ctx,
      (a) => sessionGone(ctx, a.key, a.epoch),
      async ({ key, epoch, outcome }) => {
        const sid = await session.use();
        const r = await client.release({ key, epoch, session: sid, outcome });
        await mark(sid, 'baton_release');
        if (!r.ok) return fencedAnswer(ctx, key, epoch, r);
        session.claims.delete(key);
        return answer({
          ok: true,
          key,
          session: sid,
          epoch,
          message: `Released ${key} (${outcome}). You no longer hold it.`,
        });
      },
    ),
  );

  server.registerTool(
    'baton_effect',
    {
      description: TOOL_DESCRIPTIONS.baton_effect,
      inputSchema: s.effectInput,
      outputSchema: s.effectOutput,
      annotations: annotations(false),
    },
    guarded(
      ctx,
      (a) => sessionGone(ctx, a.key, a.epoch),
      async ({ key, epoch, kind, payload }) => {
        const sid = await session.use();
        const r = await client.recordEffect({ key, epoch, session: sid, kind, payload });
        if (!r.ok) return fencedAnswer(ctx, key, epoch, r);
        const effect = { id: r.effect.id, kind: r.effect.kind, recordedAt: iso(r.effect.recordedAt) };
        const message = `Recorded effect ${effect.id} (${kind}) on ${key} under epoch ${epoch}: go ahead.`;
        return answer({ ok: true, key, session: sid, epoch, effect, message });
      },
    ),
  );

  registerQueueTools(server, ctx, mark);
  registerReadTools(server, ctx);
}

type Mark = (sid: number, tool: ToolName) => Promise<boolean>;

function registerQueueTools(server: McpServer, ctx: ToolContext, mark: Mark): void {
  const { client, session } = ctx;
  server.registerTool(
    'baton_next',
    {
      description: TOOL_DESCRIPTIONS.baton_next,
      inputSchema: s.nextInput,
      outputSchema: s.nextOutput,
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    guarded(
      ctx,
      () =>
        answer({
          ok: false,
          key: null,
          session: ctx.session.current,
          reason: 'fenced',
          message:
            'Baton: your session has ended, so it cannot take work. Stop, and tell the user that Baton ' +
            'ended this session.',
        }),
      async ({ label, project }) =>
        session.run(async (sid) => {
          const r = await client.next({ session: sid, label, project });
          await mark(sid, 'baton_next');
          if (!r.ok) {
            const gated = r.gated.map((t) => ({ key: t.key, gate: t.gate }));
            const waiting =
              gated.length === 0
                ? ''
                : ` ${gated.length} task${gated.length === 1 ? ' waits' : 's wait'} for a human approval: ` +
                  `${gated.map((g) => g.key).join(', ')}.`;
            return answer({
              ok: false,
              key: null,
              session: sid,
              gated,
              message: `No task is free for you now.${waiting} Stop, and tell the user.`,
            });
          }
          session.claims.set(r.task.key, r.epoch);
          return answer({
            ok: true,
            key: r.task.key,
            title: r.task.title,
            url: r.task.url,
            session: sid,
            epoch: r.epoch,
            granted: true,
            message:
              `You now hold ${r.task.key} "${r.task.title}" at epoch ${r.epoch}. Work on it; call ` +
              'baton_heartbeat before each change and baton_release when done.',
          });
        }),
    ),
  );

  server.registerTool(
    'baton_escalate',
    {
      description: TOOL_DESCRIPTIONS.baton_escalate,
      inputSchema: s.escalateInput,
      outputSchema: s.claimOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    },
    guarded(
      ctx,
      (a) => sessionGone(ctx, a.key, a.epoch),
      async ({ key, epoch, reason }) => {
        const sid = await session.use();
        const r = await client.escalate({ key, epoch, session: sid, reason });
        await mark(sid, 'baton_escalate');
        if (!r.ok) return fencedAnswer(ctx, key, epoch, r);
        session.claims.delete(key);
        return answer({
          ok: true,
          key,
          session: sid,
          epoch,
          message:
            `Escalated ${key} to a human: "${reason}". Your claim has ended; stop working on this task ` +
            'and do not release it.',
        });
      },
    ),
  );
}

function registerReadTools(server: McpServer, ctx: ToolContext): void {
  const { client, session } = ctx;
  server.registerTool(
    'baton_status',
    {
      description: TOOL_DESCRIPTIONS.baton_status,
      outputSchema: s.statusOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(
      ctx,
      () => toolError(new FencedError('the session ended')),
      async () => {
        const sid = session.current;
        if (sid === null) {
          return answer({
            session: null,
            state: 'none',
            claims: [],
            message: 'No Baton session yet: claim a task first.',
          });
        }
        const { state } = await client.getSession(sid);
        const claims = [];
        for (const [key, epoch] of session.claims) {
          const { holder } = await client.showTask(key);
          const current = state === 'live' && holder?.session === sid && holder.epoch === epoch;
          claims.push({ key, epoch, current, holder: wireHolder(holder) });
        }
        const gone = claims.filter((c) => !c.current).map((c) => c.key);
        const message =
          state !== 'live'
            ? `Your Baton session ${sid} is ${state}: every claim under it is gone. Stop, and tell the user.`
            : gone.length > 0
              ? `Session ${sid} is live, but these claims are no longer yours: ${gone.join(', ')}. ` +
                'Stop working on them.'
              : `Session ${sid} is live; you hold ${claims.length} claim${claims.length === 1 ? '' : 's'}.`;
        return answer({ session: sid, state, claims, message });
      },
    ),
  );

  server.registerTool(
    'baton_show_task',
    {
      description: TOOL_DESCRIPTIONS.baton_show_task,
      inputSchema: s.showTaskInput,
      outputSchema: s.taskOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(
      ctx,
      () => toolError(new FencedError('the session ended')),
      async ({ key }) => {
        const { task, holder, jobs } = await client.showTask(key);
        const who =
          holder === null ? 'no one holds it' : `held by session ${holder.session} on ${holder.host}`;
        return answer({
          key: task.key,
          title: task.title,
          priority: task.priority,
          labels: [...task.labels],
          holder: wireHolder(holder),
          jobs: jobs.map((j) => ({
            id: j.id,
            status: j.status,
            attempt: j.attempt,
            host: j.host,
            reason: j.reason,
          })),
          message: `${task.key} "${task.title}": ${who}; ${jobs.length} recent job${jobs.length === 1 ? '' : 's'}.`,
        });
      },
    ),
  );
}
