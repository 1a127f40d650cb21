/**
 * Routes an agent holding only BATON_URL and an agent token needs beyond the contract's (the
 * AgentClient port, agents/http-client.ts): its session, a heartbeat of the session alone, its
 * progress marks, and the push guard's question (is this claim still live at this epoch?), which
 * the pre-push hook of an agent without database credentials asks with the agent's token. Each
 * checks its token's scope against what it acts on before calling the coordinator.
 */
import { z } from '@hono/zod-openapi';
import { Refusal } from '../coordinator/refusals.js';
import { InvalidInputError } from '../core/errors.js';
import { checkGuard, parseGuardClaim } from '../coordinator/guard.js';
import { acting, allow, sessionHost } from './auth.js';
import {
  Id,
  Key,
  QueryNumber,
  Text,
  jsonBody,
  ok,
  okWith,
  result,
  route,
  type Api,
  type ApiDeps,
} from './kit.js';

const Progress = z
  .strictObject({ toolCalls: z.number().int().min(0).optional(), note: Text.optional() })
  .openapi('ProgressMark');

/** The push guard's claim: its session and epoch, each a whole number from 1 in plain digits. */
const GuardQuery = z.object({
  session: QueryNumber(1, Number.MAX_SAFE_INTEGER, "the claim's session id"),
  epoch: QueryNumber(1, Number.MAX_SAFE_INTEGER, "the claim's epoch"),
});

/** The store's own refusal names the counters a runner marks; this route takes toolCalls alone. */
function refuseEmptyMark(body: { readonly toolCalls?: number | undefined }): void {
  if ((body.toolCalls ?? 0) > 0) return;
  throw new InvalidInputError(
    'a progress mark must count something',
    'give toolCalls, the number of tool calls since the last mark (1 or more)',
  );
}

export function agentRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  app.openapi(
    route({
      method: 'get',
      path: '/v1/sessions/{id}',
      tags: ['sessions'],
      request: { params: z.object({ id: Id }) },
      responses: ok('the session'),
    }),
    async (context) => result(context, await baton.getSession(context.req.valid('param').id)),
  );
  sessionClaimsRoute(app, baton);
  app.openapi(
    route({
      method: 'post',
      path: '/v1/sessions/{id}/heartbeat',
      tags: ['sessions'],
      request: { params: z.object({ id: Id }) },
      responses: ok('the session is alive; its claims are renewed'),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      const subject = { what: `heartbeat session ${id}`, session: id };
      await allow(context, baton, 'heartbeat', subject, sessionHost(baton, id));
      const alive = await acting(context, () => baton.heartbeat({ session: id }));
      if (!alive.ok) {
        const message = `session ${id} is no longer live`;
        throw new Refusal('fenced', 'fenced', message, 'start a new session', { session: id, current: null });
      }
      return result(context, { ok: true, session: id });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/sessions/{id}/progress',
      tags: ['sessions'],
      request: { params: z.object({ id: Id }), ...jsonBody(Progress) },
      responses: ok('{ok}: false when the session is no longer live'),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      const body = context.req.valid('json');
      refuseEmptyMark(body);
      const subject = { what: `mark progress of session ${id}`, session: id };
      await allow(context, baton, 'progress:mark', subject, sessionHost(baton, id));
      const marked = await acting(context, () => baton.progress.mark({ session: id, ...body }));
      return result(context, { ok: marked.ok });
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/claims/{key}/guard',
      tags: ['claims'],
      request: {
        params: z.object({ key: Key }),
        query: GuardQuery,
      },
      responses: ok("the push guard's verdict: {ok: true} while (session, epoch) is the live claim"),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const claim = parseGuardClaim({ key, ...context.req.valid('query') });
      const what = `check the push guard of ${key} at epoch ${claim.epoch} for session ${claim.session}`;
      await allow(context, baton, 'read', { what, key, session: claim.session });
      return result(context, await checkGuard(baton, claim));
    },
  );
}

/**
 * A claim as GET /v1/sessions/{id}/claims answers it: what baton_status shows (agents/mcp/tools.ts)
 * and nothing else. The read is open (no token on a loopback bind), so the store's whole row (the
 * holder's pid and name, its TTL, the task's job with its command) is not handed out here.
 */
const HeldClaim = z
  .strictObject({
    key: z.string(),
    epoch: z.number().int().positive(),
    host: z.string(),
    claimedAt: z.string().openapi({ format: 'date-time', description: 'when the claim was granted' }),
    heartbeatAt: z.string().openapi({ format: 'date-time', description: "the claim's last heartbeat" }),
  })
  .openapi('HeldClaim');
const SessionClaims = z
  .strictObject({
    session: z.number().int().positive(),
    claims: z.array(HeldClaim),
    tokenSession: z
      .number()
      .int()
      .positive()
      .nullable()
      .openapi({ description: 'the session the asking agent token is bound to; null for any other' }),
  })
  .openapi('SessionClaims');

/** A session's live claims, for baton_status after a restart or a context reset (agents/mcp/tools.ts). */
function sessionClaimsRoute(app: Api, baton: ApiDeps['coordinator']): void {
  app.openapi(
    route({
      method: 'get',
      path: '/v1/sessions/{id}/claims',
      tags: ['sessions'],
      request: { params: z.object({ id: Id }) },
      responses: okWith(
        "the session's live claims (key, epoch, host, claimedAt, heartbeatAt), oldest heartbeat first, " +
          'and the session the asking agent token is bound to',
        SessionClaims,
      ),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      const claims = await baton.sessionClaims(id);
      const token = context.get('token');
      // An agent whose BATON_SESSION is not its token's session learns why its writes are refused.
      const tokenSession = token?.scope === 'agent' ? token.session : null;
      return result(context, { session: id, claims, tokenSession });
    },
  );
}
