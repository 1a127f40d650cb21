/**
 * The rest of what the CLI can do, over HTTP: `next`, escalations and the lifecycle, effects,
 * hosts, retry and tokens. Agents may take work, escalate and record effects for their own session;
 * everything else here is an operator's.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { SCOPES } from '../core/token.js';
import { fencedRefusal, noClaimRefusal, noEligibleRefusal } from '../coordinator/refusals.js';
import { acting, actorOf, allow } from './auth.js';
import { Epoch, Id, Key, SessionId, Text, jsonBody, ok, result, type Api, type ApiDeps } from './kit.js';

const route = createRoute;
const Next = z
  .object({
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
  .object({ reason: Text, session: SessionId.optional(), epoch: Epoch.optional() })
  .openapi('Escalate');
const Reason = z.object({ reason: Text.optional(), session: SessionId.optional() }).openapi('Reason');
const Close = z.object({ reason: Text.optional(), done: z.boolean().optional() }).openapi('Close');
const Approve = z.object({ gate: z.string().optional(), note: Text.optional() }).openapi('Approve');
const Gate = z.object({ gate: z.string() }).openapi('Gate');
const Effect = z
  .object({
    key: z.string(),
    session: SessionId,
    epoch: Epoch,
    kind: z.string(),
    payload: z.unknown().optional(),
  })
  .openapi('Effect');
const TokenCreate = z
  .object({
    scope: z.enum(SCOPES),
    session: SessionId.optional(),
    host: z.string().optional(),
    name: z.string().optional(),
    expires: z.string().optional().openapi({ example: '30d' }),
  })
  .openapi('TokenCreate');
const TokenId = z.string().openapi({ param: { in: 'path' }, example: '0123456789ab' });

/** The host routes: enable or disable, with the flag each sets. */
const HOST_TOGGLES = [
  ['enable', true],
  ['disable', false],
] as const;

export function moreRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/next',
      tags: ['lifecycle'],
      request: jsonBody(Next),
      responses: ok('the most urgent free task, claimed: {key, title, epoch, url?, session?}'),
    }),
    async (c) => {
      const b = c.req.valid('json');
      const what = `take the next task for session ${b.session ?? '(a new one)'}`;
      await allow(c, baton, 'next', { what, session: b.session, host: b.host });
      const r = await acting(c, () =>
        baton.lifecycle.next({ ...b, host: b.host ?? 'http', pid: b.pid ?? 0 }),
      );
      if (!r.ok) throw noEligibleRefusal(r.gated, r.session?.id ?? null);
      const { task, claim } = r;
      const session = r.session === null ? {} : { session: r.session.id };
      const url = task.url === null ? {} : { url: task.url };
      return result(c, { key: task.key, title: task.title, epoch: claim.epoch, ...url, ...session });
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
    async (c) => {
      const { key } = c.req.valid('param');
      const b = c.req.valid('json');
      await allow(c, baton, 'escalate', {
        what: `escalate ${key} for session ${b.session ?? '-'}`,
        key,
        session: b.session,
      });
      const r = await acting(c, () => baton.lifecycle.escalate({ key, ...b, by: actorOf(c, b.session) }));
      if (!r.ok) throw fencedRefusal(key, String(b.epoch ?? '?'), r.current);
      return result(c, { ...r.task, endedClaimEpoch: r.claimEpoch, endedJob: r.jobId });
    },
  );
  for (const verb of ['reopen', 'resolve', 'reject'] as const) {
    app.openapi(
      route({
        method: 'post',
        path: `/v1/tasks/{key}/${verb}`,
        tags: ['lifecycle'],
        request: { params: z.object({ key: Key }), ...jsonBody(Reason) },
        responses: ok(`the task after ${verb}`),
      }),
      async (c) => {
        const { key } = c.req.valid('param');
        const b = c.req.valid('json');
        await allow(c, baton, 'lifecycle', { what: `${verb} ${key}`, key });
        const input = { key, reason: b.reason, by: actorOf(c, b.session) };
        return result(c, await acting(c, () => baton.lifecycle[verb](input)));
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
    async (c) => {
      const { key } = c.req.valid('param');
      const b = c.req.valid('json');
      await allow(c, baton, 'lifecycle', { what: `close ${key}`, key });
      const input = { key, reason: b.reason, done: b.done === true, by: actorOf(c) };
      return result(c, await acting(c, () => baton.lifecycle.close(input)));
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/approve',
      tags: ['lifecycle'],
      request: { params: z.object({ key: Key }), ...jsonBody(Approve) },
      responses: ok('the task, approved'),
    }),
    async (c) => {
      const { key } = c.req.valid('param');
      const b = c.req.valid('json');
      await allow(c, baton, 'lifecycle', { what: `approve ${key}`, key });
      const input = { key, gate: b.gate, reason: b.note, by: actorOf(c) };
      return result(c, await acting(c, () => baton.lifecycle.approve(input)));
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
    async (c) => {
      const { key } = c.req.valid('param');
      const b = c.req.valid('json');
      await allow(c, baton, 'lifecycle', { what: `gate ${key}`, key });
      return result(c, await acting(c, () => baton.lifecycle.gate({ key, gate: b.gate, by: actorOf(c) })));
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/escalations',
      tags: ['lifecycle'],
      request: { query: z.object({ limit: z.string().optional() }) },
      responses: ok('escalated tasks, oldest first'),
    }),
    async (c) => result(c, await baton.lifecycle.escalations(c.req.valid('query'))),
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/effects',
      tags: ['effects'],
      request: jsonBody(Effect),
      responses: ok('the effect'),
    }),
    async (c) => {
      const b = c.req.valid('json');
      const what = `record a ${b.kind} effect on ${b.key} for session ${b.session}`;
      await allow(c, baton, 'effect:record', { what, key: b.key, session: b.session }, () =>
        baton.getSession(b.session).then((s) => s.host),
      );
      const r = await acting(c, () => baton.effects.record(b));
      if (!r.ok) throw fencedRefusal(b.key, String(b.epoch), r.current);
      return result(c, r.effect);
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/tasks/{key}/effects',
      tags: ['effects'],
      request: {
        params: z.object({ key: Key }),
        query: z.object({ after: z.string().optional(), limit: z.string().optional() }),
      },
      responses: ok('effects on the task, oldest first'),
    }),
    async (c) =>
      result(c, await baton.effects.list({ key: c.req.valid('param').key, ...c.req.valid('query') })),
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/claims/{key}/force-release',
      tags: ['claims'],
      request: {
        params: z.object({ key: Key }),
        ...jsonBody(z.object({ reason: Text }).openapi('ForceRelease')),
      },
      responses: ok('the claim ended: {key, epoch, holder, job, reason}; the holder is fenced'),
    }),
    async (c) => {
      const { key } = c.req.valid('param');
      const { reason } = c.req.valid('json');
      await allow(c, baton, 'force-release', { what: `force-release ${key}`, key });
      const r = await acting(c, () => baton.forceRelease({ key, reason, by: actorOf(c) }));
      if (!r.ok) throw noClaimRefusal(key);
      return result(c, { key, epoch: r.holder.epoch, holder: r.holder, job: r.job, reason });
    },
  );
  for (const [verb, on] of HOST_TOGGLES) {
    app.openapi(
      route({
        method: 'post',
        path: `/v1/hosts/{name}/${verb}`,
        tags: ['cluster'],
        request: { params: z.object({ name: z.string().openapi({ param: { in: 'path' } }) }) },
        responses: ok(`the host, ${verb}d`),
      }),
      async (c) => {
        const { name } = c.req.valid('param');
        await allow(c, baton, 'host:toggle', { what: `${verb} host ${name}`, host: name });
        return result(c, await acting(c, () => baton.cluster.setHostEnabled(name, on, actorOf(c))));
      },
    );
  }
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/{id}/retry',
      tags: ['jobs'],
      request: { params: z.object({ id: Id }) },
      responses: ok('{created, job}: the new job'),
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      await allow(c, baton, 'job:retry', { what: `retry job ${id}`, jobId: id });
      const { job, created } = await acting(c, () => baton.cluster.retryJob(id, actorOf(c)));
      return result(c, { job, created });
    },
  );
  app.openapi(
    route({ method: 'get', path: '/v1/tokens', tags: ['tokens'], responses: ok('tokens without secrets') }),
    async (c) => {
      await allow(c, baton, 'token:manage', { what: 'list tokens' });
      return result(c, await baton.tokens.list());
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tokens',
      tags: ['tokens'],
      request: jsonBody(TokenCreate),
      responses: ok('{id, token, scope}: the secret, shown once'),
    }),
    async (c) => {
      const b = c.req.valid('json');
      await allow(c, baton, 'token:manage', { what: `create a ${b.scope} token` });
      const { token, secret } = await acting(c, () => baton.tokens.create({ ...b, by: actorOf(c) }));
      return result(c, { id: token.id, token: secret, scope: token.scope });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tokens/{id}/revoke',
      tags: ['tokens'],
      request: { params: z.object({ id: TokenId }) },
      responses: ok('the token, revoked'),
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      await allow(c, baton, 'token:manage', { what: `revoke token ${id}` });
      const { token, revoked } = await acting(c, () => baton.tokens.revoke(id, actorOf(c)));
      return result(c, { ...token, revoked });
    },
  );
}
