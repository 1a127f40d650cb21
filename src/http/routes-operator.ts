/**
 * An operator's routes over HTTP: repairs (force-release a claim, enable, disable or retire a host,
 * retry a job) and tokens (list, create with the secret shown once, revoke). Registered by
 * moreRoutes in routes-more.ts, after the lifecycle's.
 */
import { z } from '@hono/zod-openapi';
import { parseOlderThan } from '../core/job-retention.js';
import { BINDING_FIELDS, checkBindings, SCOPES } from '../core/token.js';
import { acting, actorOf, allow } from './auth.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { Id, Key, SessionId, Text, jsonBody, ok, result, route, type Api } from './kit.js';
import { noClaimRefusal } from '../coordinator/refusals.js';

const TokenCreate = z
  .strictObject({
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

const RetryBody = z.strictObject({ ramMb: z.number().int().optional() }).openapi('Retry', {
  description: "optional: ramMb, the new job's RAM budget in MB (0: none) instead of the ended job's",
});

/** An operator's repairs: force-release a claim, enable or disable a host, retry a job. */
export function operatorRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/claims/{key}/force-release',
      tags: ['claims'],
      request: {
        params: z.object({ key: Key }),
        ...jsonBody(z.strictObject({ reason: Text }).openapi('ForceRelease')),
      },
      responses: ok('the claim ended: {key, epoch, holder, job, reason}; the holder is fenced'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const { reason } = context.req.valid('json');
      await allow(context, baton, 'force-release', { what: `force-release ${key}`, key });
      const outcome = await acting(context, () => baton.forceRelease({ key, reason, by: actorOf(context) }));
      if (!outcome.ok) throw noClaimRefusal(key);
      return result(context, {
        key,
        epoch: outcome.holder.epoch,
        holder: outcome.holder,
        job: outcome.job,
        reason,
      });
    },
  );
  hostRoutes(app, baton);
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/{id}/retry',
      tags: ['jobs'],
      request: {
        params: z.object({ id: Id }),
        body: { content: { 'application/json': { schema: RetryBody } }, required: false },
      },
      responses: ok('{created, job}: the new job; created false: the task already has this active job'),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      const { ramMb } = (context.req.valid('json') as z.infer<typeof RetryBody> | undefined) ?? {};
      await allow(context, baton, 'job:retry', { what: `retry job ${id}`, jobId: id });
      const { job, created } = await acting(context, () =>
        baton.cluster.retryJob(id, actorOf(context), { ramMb }),
      );
      return result(context, { job, created });
    },
  );
  pruneRoute(app, baton);
}

const PruneBody = z
  .strictObject({ olderThan: z.string().openapi({ example: '30d' }), dryRun: z.boolean().optional() })
  .openapi('JobPrune', {
    description: 'remove finished jobs that ended more than olderThan ago (decision 0039)',
  });

/** Enable, disable or retire a host, each under the `host:toggle` permission. */
function hostRoutes(app: Api, baton: Coordinator): void {
  for (const [verb, on] of HOST_TOGGLES) {
    app.openapi(
      route({
        method: 'post',
        path: `/v1/hosts/{name}/${verb}`,
        tags: ['cluster'],
        request: { params: z.object({ name: z.string().openapi({ param: { in: 'path' } }) }) },
        responses: ok(
          `the host, ${verb}d, and changed: false when it was ${verb}d already (nothing written)`,
        ),
      }),
      async (context) => {
        const { name } = context.req.valid('param');
        await allow(context, baton, 'host:toggle', { what: `${verb} host ${name}`, host: name });
        const toggled = await acting(context, () => baton.cluster.setHostEnabled(name, on, actorOf(context)));
        return result(context, { ...toggled.host, changed: toggled.changed });
      },
    );
  }
  app.openapi(
    route({
      method: 'post',
      path: '/v1/hosts/{name}/retire',
      tags: ['cluster'],
      request: { params: z.object({ name: z.string().openapi({ param: { in: 'path' } }) }) },
      responses: ok(
        '{name, retired: true}: the host is gone; 409 while a live baton up serves it or jobs run there',
      ),
    }),
    async (context) => {
      const { name } = context.req.valid('param');
      await allow(context, baton, 'host:toggle', { what: `retire host ${name}`, host: name });
      return result(context, await acting(context, () => baton.cluster.retireHost(name, actorOf(context))));
    },
  );
}

/** `baton job prune` over HTTP: an operator's job retention, as the leader's pass does it. */
function pruneRoute(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/prune',
      tags: ['jobs'],
      request: jsonBody(PruneBody),
      responses: ok(
        '{removed, cutoff, dryRun, more, fenced}: the finished jobs removed (a dry run: counted)',
      ),
    }),
    async (context) => {
      const { olderThan, dryRun } = context.req.valid('json');
      parseOlderThan(olderThan, 'olderThan'); // refused as the body names it, not as --older-than
      await allow(context, baton, 'job:prune', { what: `prune jobs older than ${olderThan}` });
      const input = { olderThan, dryRun: dryRun === true };
      return result(context, await acting(context, () => baton.cluster.pruneJobs(input, actorOf(context))));
    },
  );
}

const TokenListQuery = z.object({
  all: z.enum(['true', 'false']).optional().openapi({
    description: 'true: revoked and expired tokens too (a run of `baton up` leaves one per job)',
  }),
});

/** Tokens: an operator lists, creates (the secret is shown once) and revokes them. */
export function tokenRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'get',
      path: '/v1/tokens',
      tags: ['tokens'],
      request: { query: TokenListQuery },
      responses: ok(
        'the tokens that may still open the API (all=true: every token), oldest first, without secrets; ' +
          'a revoked one with revokedAt and revokedBy, who revoked it ' +
          '(null: nobody named, as a runner at the end of its run)',
      ),
    }),
    async (context) => {
      await allow(context, baton, 'token:manage', { what: 'list tokens' });
      return result(context, await baton.tokens.list({ all: context.req.valid('query').all === 'true' }));
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
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'token:manage', { what: `create a ${body.scope} token` });
      // Told by the body's fields ("session"), not by the CLI's flags (--session), as the store would.
      checkBindings(
        body.scope,
        { session: body.session !== undefined, host: body.host !== undefined },
        BINDING_FIELDS,
      );
      const { token, secret } = await acting(context, () =>
        baton.tokens.create({ ...body, by: actorOf(context) }),
      );
      return result(context, { id: token.id, token: secret, scope: token.scope });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tokens/{id}/revoke',
      tags: ['tokens'],
      request: { params: z.object({ id: TokenId }) },
      responses: ok('the token, revoked (revokedBy: who asked)'),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      await allow(context, baton, 'token:manage', { what: `revoke token ${id}` });
      const { token, revoked } = await acting(context, () => baton.tokens.revoke(id, actorOf(context)));
      return result(context, { ...token, revoked });
    },
  );
}
