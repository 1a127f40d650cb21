/**
 * The routes the CLI's remote mode needs beyond the contract's and the lifecycle's (issue 17,
 * item 4): settings, the sessions report, pull mode (one job or a batch), and the workspace model
 * (workspaces, agents, projects, a task's requirements and fields, its plan). Reads are anyone's the bind lets read;
 * changes are an operator's, pull mode also a host's for its own sessions.
 */
import { z } from '@hono/zod-openapi';
import { WorkspaceConfigurationError } from '../core/errors.js';
import { unresolvedRefusal } from '../coordinator/refusals.js';
import { BATCH_SIZE_MAX, HTTP_NEXT_WAIT_MAX_MS } from '../coordinator/pull.js';
import { validateDuration } from '../core/validate.js';
import { acting, actorOf, allow, sessionHost } from './auth.js';
import {
  Epoch,
  Id,
  Key,
  QueryInstant,
  SessionId,
  Text,
  jsonBody,
  ok,
  result,
  route,
  type Api,
  type ApiDeps,
} from './kit.js';

const Setting = z.strictObject({ value: z.string() }).openapi('Setting');
const Name = z.string().openapi({ param: { in: 'path' }, example: 'vague-words' });
const waitWords = 'wait up to this long for a job when none is due (a duration, at most 20s)';
const PullNext = z
  .strictObject({ session: SessionId, wait: z.string().optional().openapi({ description: waitWords }) })
  .openapi('PullNext');
const PullFinish = z
  .strictObject({
    session: SessionId,
    epoch: Epoch,
    status: z.enum(['done', 'failed', 'cancelled']).optional(),
    exitCode: z.number().int().min(0).max(255).optional(),
    reason: Text.optional(),
    next: z.boolean().optional(),
  })
  .openapi('PullFinish');
const JobId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).openapi({ example: 17 });
const Lease = z.string().max(100).openapi({
  description: 'how long each job taken may be held, such as 90s or 5m (1 s to 24 h; default 5m)',
  example: '5m',
});
const PullNextBatch = z
  .strictObject({
    session: SessionId,
    size: z.number().int().min(1).max(BATCH_SIZE_MAX).openapi({ description: 'jobs to take', example: 50 }),
    lease: Lease.optional(),
  })
  .openapi('PullNextBatch');
const PullBatchMember = z
  .strictObject({
    id: JobId,
    epoch: Epoch,
    status: z.enum(['done', 'failed', 'cancelled']).optional(),
    exitCode: z.number().int().min(0).max(255).optional(),
    reason: Text.optional(),
  })
  .openapi('PullBatchMember');
const PullFinishBatch = z
  .strictObject({
    session: SessionId,
    finish: z.array(PullBatchMember).min(1).max(BATCH_SIZE_MAX),
    next: z
      .number()
      .int()
      .min(0)
      .max(BATCH_SIZE_MAX)
      .optional()
      .openapi({ description: 'then take up to this many due jobs, in the same commit' }),
    lease: Lease.optional(),
  })
  .openapi('PullFinishBatch');
const WorkspaceAdd = z
  .strictObject({ name: z.string(), path: z.string(), kind: z.string().optional() })
  .openapi('WorkspaceAdd');
const AgentAdd = z
  .strictObject({
    name: z.string(),
    role: z.string(),
    department: z.string().optional(),
    workspace: z.string().optional(),
  })
  .openapi('AgentAdd');
const ProjectAdd = z
  .strictObject({ name: z.string(), primaryWorkspace: z.string().optional() })
  .openapi('ProjectAdd');
const Requirements = z
  .strictObject({ requiresFilesystem: z.boolean().optional(), workspace: z.string().nullable().optional() })
  .openapi('TaskRequirements');
const TaskUpdate = z
  .strictObject({
    title: Text.optional(),
    body: Text.optional(),
    url: z.string().optional(),
    review: z.enum(['required', 'none']).optional(),
  })
  .openapi('TaskUpdate');

/** A workspace the model cannot resolve is WORKSPACE_UNRESOLVED with its cause and fix, as the CLI says. */
async function resolving<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw error instanceof WorkspaceConfigurationError ? unresolvedRefusal(error) : error;
  }
}

export function cliRoutes(app: Api, deps: ApiDeps): void {
  settingRoutes(app, deps);
  pullRoutes(app, deps);
  batchRoutes(app, deps);
  workspaceRoutes(app, deps);
  taskRoutes(app, deps);
}

function settingRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  app.openapi(
    route({ method: 'get', path: '/v1/settings', tags: ['settings'], responses: ok('the settings set') }),
    async (context) => result(context, await baton.lifecycle.settings()),
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/settings/{name}',
      tags: ['settings'],
      request: { params: z.object({ name: Name }), ...jsonBody(Setting) },
      responses: ok('the setting'),
    }),
    async (context) => {
      const { name } = context.req.valid('param');
      const { value } = context.req.valid('json');
      await allow(context, baton, 'settings', { what: `set ${name}` });
      return result(
        context,
        await acting(context, () => baton.lifecycle.setSetting({ name, value, by: actorOf(context) })),
      );
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/report/sessions',
      tags: ['ledger'],
      request: {
        query: z.object({
          since: QueryInstant('sessions live at or after this time: epoch ms or an ISO time').optional(),
          until: QueryInstant('sessions live before this time: epoch ms or an ISO time').optional(),
          host: z.string().optional(),
        }),
      },
      responses: ok('per session: host, pid, start, end and how, issues worked, jobs, time held'),
    }),
    async (context) => {
      const query = context.req.valid('query');
      const { since, until } = query;
      return result(
        context,
        await baton.ledger.sessions({
          ...(since === undefined ? {} : { since }),
          ...(until === undefined ? {} : { until }),
          ...(query.host === undefined ? {} : { host: query.host }),
        }),
      );
    },
  );
}

function pullRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/next',
      tags: ['jobs'],
      request: jsonBody(PullNext),
      responses: ok('the next due job, claimed and started for the session; null when none'),
    }),
    async (context) => {
      const { session, wait } = context.req.valid('json');
      // At most 20 s per request: a client that waits longer asks again (cli/remote-api.ts).
      const waitMs =
        wait === undefined ? undefined : validateDuration('wait', wait, 0, HTTP_NEXT_WAIT_MAX_MS);
      const what = `take the next job for session ${session}`;
      await allow(context, baton, 'job:run', { what, session }, sessionHost(baton, session));
      // A client that hangs up stops the wait: nothing is taken for an answer no one reads.
      const gone = context.req.raw.signal;
      const job = await acting(context, () =>
        baton.pull.next(session, waitMs === undefined ? undefined : `${waitMs}ms`, gone),
      );
      return result(context, { job });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/{id}/finish',
      tags: ['jobs'],
      request: {
        params: z.object({ id: Id }),
        ...jsonBody(PullFinish),
      },
      responses: ok('{finished: {ok, job, reason?}, next}'),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      const { next, ...body } = context.req.valid('json');
      const what = `finish job ${id} for session ${body.session}`;
      await allow(
        context,
        baton,
        'job:run',
        { what, session: body.session, jobId: id },
        sessionHost(baton, body.session),
      );
      return result(context, await acting(context, () => baton.pull.finish({ id, ...body }, next === true)));
    },
  );
}

/** `job next --batch N` and `job finish-batch`: one commit each, every member under its own epoch. */
function batchRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/next-batch',
      tags: ['jobs'],
      request: jsonBody(PullNextBatch),
      responses: ok('{jobs, leaseUntil}: the due jobs taken (none: []), each started under its own epoch'),
    }),
    async (context) => {
      const { session, size, lease } = context.req.valid('json');
      const what = `take a batch of ${size} jobs for session ${session}`;
      await allow(context, baton, 'job:run', { what, session }, sessionHost(baton, session));
      const taken = await acting(context, () => baton.pull.nextBatch({ session, size, lease }));
      return result(context, { jobs: taken.taken, leaseUntil: taken.leaseUntil });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/finish-batch',
      tags: ['jobs'],
      request: jsonBody(PullFinishBatch),
      responses: ok(
        '{finished, jobs, leaseUntil}: per member in order {ok, job, reason?, timedOut?} (a fenced one: ok ' +
          'false, reason lost, the job as it is now; the others still finish; one past its own time limit: ok, ' +
          "the job failed timed out, timedOut true; one the leader's sweep failed before: ok false, reason lost, " +
          'timedOut true and message, the time-limit line), then the jobs taken',
      ),
    }),
    async (context) => {
      const { session, finish, next, lease } = context.req.valid('json');
      const ids = finish.map((member) => member.id);
      const named = ids.length > 10 ? `${ids.slice(0, 10).join(', ')}, …` : ids.join(', ');
      const what = `finish jobs ${named} for session ${session}`;
      await allow(context, baton, 'job:run', { what, session }, sessionHost(baton, session));
      const input = { session, finish, take: next ?? 0, ...(lease === undefined ? {} : { lease }) };
      const batch = await acting(context, () => baton.pull.batch(input));
      return result(context, { finished: batch.finished, jobs: batch.taken, leaseUntil: batch.leaseUntil });
    },
  );
}

function workspaceRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  const ws = baton.workspaces;
  const lists = [
    ['workspaces', () => ws.listWorkspaces()],
    ['agents', () => ws.listAgents()],
    ['projects', () => ws.listProjects()],
  ] as const;
  for (const [name, list] of lists) {
    app.openapi(
      route({ method: 'get', path: `/v1/${name}`, tags: ['workspaces'], responses: ok(`${name} by name`) }),
      async (context) => result(context, await list()),
    );
  }
  app.openapi(
    route({
      method: 'post',
      path: '/v1/workspaces',
      tags: ['workspaces'],
      request: jsonBody(WorkspaceAdd),
      responses: ok('the workspace'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'workspace:manage', { what: `add workspace ${body.name}` });
      return result(context, await acting(context, () => ws.addWorkspace({ ...body, by: actorOf(context) })));
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/agents',
      tags: ['workspaces'],
      request: jsonBody(AgentAdd),
      responses: ok('the agent'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'workspace:manage', { what: `add agent ${body.name}` });
      return result(context, await acting(context, () => ws.addAgent(body)));
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/projects',
      tags: ['workspaces'],
      request: jsonBody(ProjectAdd),
      responses: ok('the project'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'workspace:manage', { what: `add project ${body.name}` });
      return result(context, await acting(context, () => ws.addProject(body)));
    },
  );
}

function taskRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  const ws = baton.workspaces;
  app.openapi(
    route({
      method: 'get',
      path: '/v1/tasks/{key}/plan',
      tags: ['workspaces'],
      request: { params: z.object({ key: Key }), query: z.object({ agent: z.string().optional() }) },
      responses: ok("the task's workspace plan, its requirements and agent"),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      return result(
        context,
        await resolving(() => ws.plan({ key, agent: context.req.valid('query').agent })),
      );
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/requirements',
      tags: ['workspaces'],
      request: { params: z.object({ key: Key }), ...jsonBody(Requirements) },
      responses: ok("the task's filesystem requirement and workspace"),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const body = context.req.valid('json');
      await allow(context, baton, 'task:update', { what: `set the requirements of ${key}`, key });
      return result(
        context,
        await acting(context, () => resolving(() => ws.setTaskRequirements({ key, ...body }))),
      );
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks/{key}/update',
      tags: ['tasks'],
      request: { params: z.object({ key: Key }), ...jsonBody(TaskUpdate) },
      responses: ok('the task, with its new title, body, url or review mode'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const body = context.req.valid('json');
      await allow(context, baton, 'task:update', { what: `update ${key}`, key });
      return result(
        context,
        await acting(context, () => baton.updateTask({ key, ...body, by: actorOf(context) })),
      );
    },
  );
}
