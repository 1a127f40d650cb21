/**
 * The rest of what the CLI can do, over HTTP: `next`, escalations and the lifecycle, dependencies,
 * effects, and (routes-operator.ts) hosts, retry and tokens. Agents may take work, escalate and
 * record effects for their own session; everything else here is an operator's.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { fencedRefusal, noEligibleRefusal } from '../coordinator/refusals.js';
import { InvalidInputError } from '../core/errors.js';
import { acting, actorOf, allow, sessionHost, type AuthEnv } from './auth.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { operatorRoutes, tokenRoutes } from './routes-operator.js';
import {
  Epoch,
  Key,
  Query,
  SessionId,
  Text,
  jsonBody,
  ok,
  result,
  route,
  type Api,
  type ApiDeps,
} from './kit.js';

const Next = z
  .strictObject({
    session: SessionId.optional(),
    host: z.string().optional(),
    pid: z.number().int().min(0).optional(),
    kind: z.enum(['agent', 'human', 'daemon']).optional(),
    ttl: z.string().optional(),
    project: z.string().optional(),
    label: z.string().optional(),
  })
  .openapi('Next');
const Escalate = z
  .strictObject({ reason: Text, session: SessionId.optional(), epoch: Epoch.optional() })
  .openapi('Escalate');
const Reason = z.strictObject({ reason: Text.optional(), session: SessionId.optional() }).openapi('Reason');
/** Reopen and reject say why, as `baton reopen` and `baton reject` require --reason. */
const ReasonRequired = z
  .strictObject({ reason: Text, session: SessionId.optional() })
  .openapi('ReasonRequired');
const Close = z
  .strictObject({ reason: Text.optional(), done: z.boolean().optional(), session: SessionId.optional() })
  .openapi('Close');
const Approve = z
  .strictObject({ gate: z.string().optional(), note: Text.optional(), session: SessionId.optional() })
  .openapi('Approve');
const Gate = z.strictObject({ gate: z.string(), session: SessionId.optional() }).openapi('Gate');
const Depend = z.strictObject({ on: z.string(), session: SessionId.optional() }).openapi('Depend');
const Effect = z
  .strictObject({
    key: z.string(),
    session: SessionId,
    epoch: Epoch,
    kind: z.string(),
    payload: z.unknown().optional(),
  })
  .openapi('Effect');
export function moreRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  takeRoutes(app, baton);
  lifecycleRoutes(app, baton);
  approvalRoutes(app, baton);
  dependencyRoutes(app, baton);
  effectRoutes(app, baton);
  operatorRoutes(app, baton);
  tokenRoutes(app, baton);
}

/** `next` and `escalate`: an agent takes the most urgent free task, or hands its own to a human. */
function takeRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/next',
      tags: ['lifecycle'],
      request: jsonBody(Next),
      responses: ok('the most urgent free task, claimed: {key, title, epoch, url?, session?}'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      const what = `take the next task for session ${body.session ?? '(a new one)'}`;
      await allow(context, baton, 'next', { what, session: body.session, host: body.host });
      const outcome = await acting(context, () =>
        baton.lifecycle.next({ ...body, host: body.host ?? 'http', pid: body.pid ?? 0 }),
      );
      if (!outcome.ok) throw noEligibleRefusal(outcome.gated);
      const { task, claim } = outcome;
      const session = outcome.session === null ? {} : { session: outcome.session.id };
      const url = task.url === null ? {} : { url: task.url };
      return result(context, { key: task.key, title: task.title, epoch: claim.epoch, ...url, ...session });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/escalate',
      tags: ['lifecycle'],
      request: { params: z.object({ key: Key }), ...jsonBody(Escalate) },
      responses: ok('the task, escalated, with the claim and job it ended'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const body = context.req.valid('json');
      if ((body.session === undefined) !== (body.epoch === undefined))
        throw new InvalidInputError(
          'an escalation under a claim needs both the session and the epoch',
          'give both "session" and "epoch" (an agent: its claim\'s), or neither',
        );
      await allow(context, baton, 'escalate', {
        what: `escalate ${key} for session ${body.session ?? '-'}`,
        key,
        session: body.session,
      });
      const by = actorOf(context, body.session);
      const outcome = await acting(context, () => baton.lifecycle.escalate({ key, ...body, by }));
      if (!outcome.ok)
        throw fencedRefusal(
          key,
          String(body.epoch ?? '?'),
          outcome.current,
          outcome.sessionEnded,
          body.session,
        );
      return result(context, {
        ...outcome.task,
        endedClaimEpoch: outcome.claimEpoch,
        endedJob: outcome.jobId,
      });
    },
  );
}

/** An operator's step in a task's lifecycle: allowed by the token's scope, run crediting it. */
async function lifecycleStep(
  context: Context<AuthEnv>,
  baton: Coordinator,
  verb: string,
  key: string,
  step: () => Promise<unknown>,
) {
  await allow(context, baton, 'lifecycle', { what: `${verb} ${key}`, key });
  return result(context, await acting(context, step));
}

/** The operator ends or reopens a task: reopen, resolve, reject, close. */
function lifecycleRoutes(app: Api, baton: Coordinator): void {
  const { lifecycle } = baton;
  for (const verb of ['reopen', 'resolve', 'reject'] as const) {
    app.openapi(
      route({
        method: 'post',
        path: `/v1/tasks/{key}/${verb}`,
        tags: ['lifecycle'],
        request: {
          params: z.object({ key: Key }),
          ...jsonBody(verb === 'resolve' ? Reason : ReasonRequired),
        },
        responses: ok(`the task after ${verb}`),
      }),
      async (context) => {
        const { key } = context.req.valid('param');
        const body = context.req.valid('json');
        const input = { key, reason: body.reason, by: actorOf(context, body.session) };
        return lifecycleStep(context, baton, verb, key, () => lifecycle[verb](input));
      },
    );
  }
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/close',
      tags: ['lifecycle'],
      request: { params: z.object({ key: Key }), ...jsonBody(Close) },
      responses: ok('the task, closed (or done)'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const body = context.req.valid('json');
      const input = {
        key,
        reason: body.reason,
        done: body.done === true,
        by: actorOf(context, body.session),
      };
      return lifecycleStep(context, baton, 'close', key, () => lifecycle.close(input));
    },
  );
}

/** What waits for a human: approve a task behind its gate, put one behind a gate, list escalations. */
function approvalRoutes(app: Api, baton: Coordinator): void {
  const { lifecycle } = baton;
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/approve',
      tags: ['lifecycle'],
      request: { params: z.object({ key: Key }), ...jsonBody(Approve) },
      responses: ok('the task, approved'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const body = context.req.valid('json');
      const input = { key, gate: body.gate, reason: body.note, by: actorOf(context, body.session) };
      return lifecycleStep(context, baton, 'approve', key, () => lifecycle.approve(input));
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/gate',
      tags: ['lifecycle'],
      request: { params: z.object({ key: Key }), ...jsonBody(Gate) },
      responses: ok('the task, waiting behind the gate'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const { gate, session } = context.req.valid('json');
      const input = { key, gate, by: actorOf(context, session) };
      return lifecycleStep(context, baton, 'gate', key, () => lifecycle.gate(input));
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/escalations',
      tags: ['lifecycle'],
      request: { query: Query([], ['limit']) },
      responses: ok('escalated tasks, oldest first'),
    }),
    async (context) => result(context, await lifecycle.escalations(context.req.valid('query'))),
  );
}

/** Task dependencies: make a task wait until another is done, or stop it waiting (the lifecycle's scope). */
function dependencyRoutes(app: Api, baton: Coordinator): void {
  const { lifecycle } = baton;
  for (const verb of ['depend', 'undepend'] as const) {
    app.openapi(
      route({
        method: 'post',
        path: `/v1/tasks/{key}/${verb}`,
        tags: ['lifecycle'],
        request: { params: z.object({ key: Key }), ...jsonBody(Depend) },
        responses: ok('what the task waits for and what waits for it, after the change'),
      }),
      async (context) => {
        const { key } = context.req.valid('param');
        const body = context.req.valid('json');
        const input = { key, on: body.on, by: actorOf(context, body.session) };
        return lifecycleStep(context, baton, verb, key, () => lifecycle[verb](input));
      },
    );
  }
}

/** Effects: an agent records one under its claim; anyone who may read lists a task's. */
function effectRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/effects',
      tags: ['effects'],
      request: jsonBody(Effect),
      responses: ok('the effect'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      const what = `record a ${body.kind} effect on ${body.key} for session ${body.session}`;
      const subject = { what, key: body.key, session: body.session };
      await allow(context, baton, 'effect:record', subject, sessionHost(baton, body.session));
      const outcome = await acting(context, () => baton.effects.record(body));
      if (!outcome.ok) {
        throw fencedRefusal(
          body.key,
          String(body.epoch),
          outcome.current,
          outcome.sessionEnded,
          body.session,
        );
      }
      return result(context, outcome.effect);
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/tasks/{key}/effects',
      tags: ['effects'],
      request: {
        params: z.object({ key: Key }),
        query: Query([], ['after', 'limit']),
      },
      responses: ok('effects on the task, oldest first'),
    }),
    async (context) => {
      const filter = { key: context.req.valid('param').key, ...context.req.valid('query') };
      return result(context, await baton.effects.list(filter));
    },
  );
}
