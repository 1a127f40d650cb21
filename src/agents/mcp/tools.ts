/**
 * Baton's MCP tools, written for a model: each description says when to call the tool and what
 * to do on each outcome. Held and fenced are results (ok: false, who holds the task now, and the
 * words of messages.ts telling the model to stop); bad arguments and refusals are tool errors
 * carrying the hint (answers.ts). The tools speak to Baton only through the AgentClient port.
 * They come in three groups: taking a task (claim, next), acting under a held claim (heartbeat,
 * effect, release, escalate) and reading (status, show_task).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { EffectResult } from '../../core/effect.js';
import type { Task } from '../../core/task.js';
import { FencedError } from '../../core/errors.js';
import type { SessionId } from '../../core/session.js';
import { heldMessage } from '../messages.js';
import {
  answer,
  guarded,
  iso,
  markCall,
  onHeldClaim,
  sessionGone,
  toolError,
  wireHolder,
} from './answers.js';
import type { ToolContext } from './answers.js';
import type { HeldClaim } from '../client.js';
import type { ReleaseResult } from '../../core/claim.js';
import { TOOL_DESCRIPTIONS } from './descriptions.js';
import * as schemas from './schemas.js';

const annotations = (readOnlyHint: boolean) => ({ readOnlyHint, openWorldHint: false });

type Recorded = Extract<EffectResult, { readonly ok: true }>;

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;

export function registerTools(server: McpServer, ctx: ToolContext): void {
  registerTakeTools(server, ctx);
  registerHeldClaimTools(server, ctx);
  registerEscalateTool(server, ctx);
  registerReadTools(server, ctx);
}

/** baton_claim and baton_next: the two ways a model comes to hold a task. */
function registerTakeTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'baton_claim',
    {
      description: TOOL_DESCRIPTIONS.baton_claim,
      inputSchema: schemas.claimInput,
      outputSchema: schemas.claimOutput,
      annotations: { ...annotations(false), idempotentHint: true },
    },
    guarded(
      (args) => sessionGone(ctx, args.key, undefined),
      async ({ key }) => ctx.session.run((sid) => claimTask(ctx, key, sid)),
    ),
  );
  server.registerTool(
    'baton_next',
    {
      description: TOOL_DESCRIPTIONS.baton_next,
      inputSchema: schemas.nextInput,
      outputSchema: schemas.nextOutput,
      annotations: annotations(false),
    },
    guarded(
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
      async ({ label, project }) => ctx.session.run((sid) => nextTask(ctx, sid, { label, project })),
    ),
  );
}

async function claimTask(ctx: ToolContext, key: string, sid: SessionId): Promise<CallToolResult> {
  const outcome = await ctx.client.claim({ key, session: sid });
  await markCall(ctx, sid, 'baton_claim');
  if (!outcome.ok) {
    const holder = wireHolder(outcome.holder);
    const message = heldMessage(key, outcome.holder);
    return answer({ ok: false, key, session: sid, reason: 'held', holder, message });
  }
  const { claim, granted } = outcome;
  ctx.session.claims.set(key, claim.epoch);
  const again = granted ? '' : ' (you held it already)';
  const message =
    `Claimed ${key} at epoch ${claim.epoch}${again}. Work on it; call baton_heartbeat before ` +
    'each change and baton_release when done.';
  return answer({ ok: true, key, session: sid, epoch: claim.epoch, granted, message });
}

async function nextTask(
  ctx: ToolContext,
  sid: SessionId,
  filter: { readonly label?: string | undefined; readonly project?: string | undefined },
): Promise<CallToolResult> {
  const outcome = await ctx.client.next({ session: sid, ...filter });
  await markCall(ctx, sid, 'baton_next');
  if (!outcome.ok) return noTaskFree(sid, outcome.gated);
  const { task, epoch } = outcome;
  ctx.session.claims.set(task.key, epoch);
  return answer({
    ok: true,
    key: task.key,
    title: task.title,
    url: task.url,
    session: sid,
    epoch,
    granted: true,
    message:
      `You now hold ${titled(task)} at epoch ${epoch}. Work on it; call ` +
      'baton_heartbeat before each change and baton_release when done.',
  });
}

/**
 * A task named for the model: its key and its title quoted as a JSON string (a quote in it
 * escaped), or `(no title)` for a task added without one, rather than an empty `""`.
 */
function titled(task: Pick<Task, 'key' | 'title'>): string {
  return task.title === '' ? `${task.key} (no title)` : `${task.key} ${JSON.stringify(task.title)}`;
}

function noTaskFree(sid: SessionId, gatedTasks: readonly Task[]): CallToolResult {
  const gated = gatedTasks.map((task) => ({ key: task.key, gate: task.gate }));
  const waiting =
    gated.length === 0
      ? ''
      : ` ${gated.length} task${gated.length === 1 ? ' waits' : 's wait'} for a human approval: ` +
        `${gated.map((entry) => entry.key).join(', ')}.`;
  return answer({
    ok: false,
    key: null,
    session: sid,
    gated,
    message: `No task is free for you now.${waiting} Stop, and tell the user.`,
  });
}

/** baton_heartbeat, baton_effect and baton_release: steps under a claim the model holds. */
function registerHeldClaimTools(server: McpServer, ctx: ToolContext): void {
  const { client } = ctx;
  server.registerTool(
    'baton_heartbeat',
    {
      description: TOOL_DESCRIPTIONS.baton_heartbeat,
      inputSchema: schemas.claimRefInput,
      outputSchema: schemas.claimOutput,
      annotations: annotations(false),
    },
    onHeldClaim(ctx, {
      step: ({ key, epoch }, sid) => client.heartbeat({ session: sid, claim: { key, epoch } }),
      reply: ({ key, epoch }) => ({
        message: `Your claim on ${key} at epoch ${epoch} is current: carry on.`,
      }),
    }),
  );
  server.registerTool(
    'baton_release',
    {
      description: TOOL_DESCRIPTIONS.baton_release,
      inputSchema: schemas.releaseInput,
      outputSchema: schemas.releaseOutput,
      annotations: { ...annotations(false), destructiveHint: true },
    },
    releaseUnlessRunners(ctx),
  );
  server.registerTool(
    'baton_effect',
    {
      description: TOOL_DESCRIPTIONS.baton_effect,
      inputSchema: schemas.effectInput,
      outputSchema: schemas.effectOutput,
      annotations: annotations(false),
    },
    onHeldClaim(ctx, {
      step: ({ key, epoch, kind, payload }, sid) =>
        client.recordEffect({ key, epoch, session: sid, kind, payload }),
      reply: ({ key, epoch, kind }, { effect: recorded }: Recorded) => {
        const effect = { id: recorded.id, kind: recorded.kind, recordedAt: iso(recorded.recordedAt) };
        const message = `Recorded effect ${effect.id} (${kind}) on ${key} under epoch ${epoch}: go ahead.`;
        return { effect, message };
      },
    }),
  );
}

type ReleaseArgs = {
  readonly key: string;
  readonly epoch: number;
  readonly outcome: 'done' | 'failed' | 'released';
};

/**
 * baton_release. A claim a runner made for this run is the runner's to release: it finishes the
 * job (and so the task) by the agent's exit. Released done from here, the task would be done
 * while its job runs, so the job would end cancelled and the agent be killed; so a `done` there
 * is only checked (still current?) and the model told to finish. failed and released go through:
 * the runner, fenced, stops the run and gives the job back.
 */
function releaseUnlessRunners(ctx: ToolContext) {
  const { client } = ctx;
  const released = onHeldClaim(ctx, {
    step: ({ key, epoch, outcome }: ReleaseArgs, sid) =>
      client.release({ key, epoch, session: sid, outcome }),
    // Kept (`released: false`): over HTTP the server knew the run's claim by its token, this server
    // did not (no BATON_KEY, BATON_EPOCH): the runner holds it still.
    reply: ({ key, outcome }, done: Released) =>
      'released' in done
        ? keptForRunner(key)
        : { released: true, message: `Released ${key} (${outcome}). You no longer hold it.` },
    mark: 'baton_release',
    ends: (done) => !('released' in done),
  });
  const leftToRunner = onHeldClaim(ctx, {
    step: ({ key, epoch }: ReleaseArgs, sid) => client.heartbeat({ session: sid, claim: { key, epoch } }),
    reply: ({ key }) => keptForRunner(key),
    mark: 'baton_release',
  });
  return (args: ReleaseArgs): Promise<CallToolResult> =>
    args.outcome === 'done' && ctx.session.isRunnersClaim(args) ? leftToRunner(args) : released(args);
}

type Released = Extract<ReleaseResult, { readonly ok: true }>;

/** What baton_release says of a `done` the runner records by the agent's exit, the claim kept. */
const keptForRunner = (key: string) => ({
  released: false,
  message:
    `Nothing released: Baton's runner holds ${key} for this run and records it done when you ` +
    'finish and exit with status 0. Stop working now and end your turn.',
});

/** baton_escalate: hands the held task to a human, which ends the claim. */
function registerEscalateTool(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'baton_escalate',
    {
      description: TOOL_DESCRIPTIONS.baton_escalate,
      inputSchema: schemas.escalateInput,
      outputSchema: schemas.claimOutput,
      annotations: { ...annotations(false), destructiveHint: true },
    },
    onHeldClaim(ctx, {
      step: ({ key, epoch, reason }, sid) => ctx.client.escalate({ key, epoch, session: sid, reason }),
      reply: ({ key, reason }) => ({
        message:
          `Escalated ${key} to a human: "${reason}". Your claim has ended; stop working on this task ` +
          'and do not release it.',
      }),
      mark: 'baton_escalate',
      ends: true,
    }),
  );
}

/** baton_status and baton_show_task: reads, which need no claim and change nothing. */
function registerReadTools(server: McpServer, ctx: ToolContext): void {
  const sessionEnded = () => toolError(new FencedError('the session ended'));
  server.registerTool(
    'baton_status',
    {
      description: TOOL_DESCRIPTIONS.baton_status,
      inputSchema: schemas.statusInput,
      outputSchema: schemas.statusOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(sessionEnded, () => sessionStatus(ctx)),
  );
  server.registerTool(
    'baton_show_task',
    {
      description: TOOL_DESCRIPTIONS.baton_show_task,
      inputSchema: schemas.showTaskInput,
      outputSchema: schemas.taskOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(sessionEnded, ({ key }) => showTask(ctx, key)),
  );
}

async function sessionStatus(ctx: ToolContext): Promise<CallToolResult> {
  const { client, session } = ctx;
  const sid = session.current;
  if (sid === null) {
    const message = 'No Baton session yet: claim a task first.';
    return answer({ session: null, state: 'none', claims: [], message });
  }
  const [{ state }, held] = await Promise.all([client.getSession(sid), client.sessionClaims(sid)]);
  const tokenSession = held?.tokenSession ?? null;
  if (tokenSession !== null && tokenSession !== sid) {
    const message =
      `BATON_SESSION names session ${sid}, but BATON_TOKEN is bound to session ${tokenSession}: Baton ` +
      'refuses every change you make. Stop, and tell the user to give you the two of one session.';
    return answer({ session: sid, state, claims: [], tokenSession, message });
  }
  const claims = await statusClaims(ctx, sid, state === 'live', held?.claims ?? null);
  const gone = claims.filter((claim) => !claim.current).map((claim) => `${claim.key} (epoch ${claim.epoch})`);
  const message =
    state !== 'live'
      ? `Your Baton session ${sid} is ${state}: every claim under it is gone. Stop, and tell the user.`
      : gone.length > 0
        ? `Session ${sid} is live, but these claims are no longer yours: ${gone.join(', ')}. ` +
          'Stop working on them.'
        : `Session ${sid} is live; you hold ${plural(claims.length, 'claim')}${heldList(claims)}.`;
  return answer({ session: sid, state, claims, message });
}

const heldList = (claims: readonly StatusClaim[]): string =>
  claims.length === 0 ? '' : `: ${claims.map((claim) => `${claim.key} at epoch ${claim.epoch}`).join(', ')}`;

/** A claim as baton_status shows it. */
interface StatusClaim {
  readonly key: string;
  readonly epoch: number;
  readonly current: boolean;
  readonly since?: string;
  readonly heartbeatAt?: string;
  readonly holder: ReturnType<typeof wireHolder>;
}

/**
 * The session's live claims as the store has them (a claim made by the CLI, or by this server
 * before a restart, is as much the session's), then those this server made that are gone. `listed`
 * null: a server too old to list them; each claim this server made is then asked after by its task.
 */
async function statusClaims(
  { client, session }: ToolContext,
  sid: SessionId,
  live: boolean,
  listed: readonly HeldClaim[] | null,
): Promise<StatusClaim[]> {
  const held = live ? (listed ?? []) : [];
  const claims: StatusClaim[] = held.map((claim) => {
    const since = iso(claim.claimedAt);
    const holder = { session: sid, host: claim.host, since, epoch: claim.epoch };
    return {
      key: claim.key,
      epoch: claim.epoch,
      current: true,
      since,
      heartbeatAt: iso(claim.heartbeatAt),
      holder,
    };
  });
  for (const [key, epoch] of session.claims) {
    if (held.some((claim) => claim.key === key && claim.epoch === epoch)) continue;
    const { holder } = await client.showTask(key);
    const current = live && listed === null && holder?.session === sid && holder.epoch === epoch;
    claims.push({ key, epoch, current, holder: wireHolder(holder) });
  }
  return claims;
}

async function showTask({ client }: ToolContext, key: string): Promise<CallToolResult> {
  const { task, holder, jobs } = await client.showTask(key);
  const who = holder === null ? 'no one holds it' : `held by session ${holder.session} on ${holder.host}`;
  return answer({
    key: task.key,
    title: task.title,
    priority: task.priority,
    labels: [...task.labels],
    holder: wireHolder(holder),
    jobs: jobs.map((job) => ({
      id: job.id,
      status: job.status,
      attempt: job.attempt,
      host: job.host,
      reason: job.reason,
    })),
    message: `${titled(task)}: ${who}; ${plural(jobs.length, 'recent job')}.`,
  });
}
