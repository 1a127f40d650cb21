/**
 * The interface contract's routes (issue 17): tasks, sessions, claims, jobs, the leader, hosts and
 * the ledger. Each checks its token's scope against what it acts on, then calls the coordinator
 * with the ledger crediting the token; held, fenced and lost answer 409 as the CLI's exit 3 does.
 */
import { z } from '@hono/zod-openapi';
import { RELEASE_OUTCOMES } from '../core/claim.js';
import type { Job } from '../core/job.js';
import { fencedRefusal, Refusal } from '../coordinator/refusals.js';
import { acting, actorOf, allow, askerOf, sessionHost } from './auth.js';
import { outputFor } from './job-output.js';
import { claimAs, releaseAs } from './claims.js';
import {
  Epoch,
  Id,
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

const TaskAdd = z
  .strictObject({
    key: z.string(),
    title: Text.optional(),
    priority: z.number().int().optional(),
    project: z.string().optional(),
    assignee: z.string().optional(),
    labels: z.array(z.string()).max(64).optional(),
    body: Text.optional(),
    url: z.string().optional(),
    review: z.enum(['required', 'none']).optional(),
    after: z.array(z.string()).max(64).optional(),
    requiresFilesystem: z.boolean().optional(),
    workspace: z.string().optional(),
  })
  .openapi('TaskAdd');
const SessionStart = z
  .strictObject({
    kind: z.enum(['agent', 'human', 'daemon']).optional(),
    host: z.string(),
    pid: z.number().int().min(0).optional(),
    name: z.string().optional(),
    ttl: z.string().optional().openapi({ example: '8h' }),
  })
  .openapi('SessionStart');
const SessionEndBody = z.strictObject({ operator: z.boolean().optional() }).openapi('SessionEnd', {
  description: 'optional: operator true when someone other than the session ends it',
});
const ClaimBody = z.strictObject({ session: SessionId }).openapi('Claim');
const HeartbeatBody = z.strictObject({ session: SessionId, epoch: Epoch }).openapi('Heartbeat');
const ReleaseBody = z
  .strictObject({ session: SessionId, epoch: Epoch, outcome: z.enum(RELEASE_OUTCOMES).optional() })
  .openapi('Release');
const Enqueue = z
  .strictObject({
    key: z.string(),
    command: z.string().optional(),
    ramMb: z.number().int().optional(),
    priority: z.number().int().optional(),
    attempts: z.number().int().optional(),
    /** A duration (`2h`, `90m`) or a number of seconds: the job's run time limit. */
    timeLimit: z.union([z.string(), z.number()]).optional(),
  })
  .openapi('Enqueue');

/** Jobs as `baton queue list --json` shows them: each with its progress. */
async function withProgress(baton: ApiDeps['coordinator'], jobs: readonly Job[]) {
  const progress = await baton.progress.ofJobs(jobs);
  return jobs.map((job) => {
    const known = progress.get(job.id);
    return {
      ...job,
      stalled: known?.stalled ?? false,
      lastProgressAt: known?.lastProgressAt ?? null,
      progress: known?.progress ?? null,
    };
  });
}

type Coordinator = ApiDeps['coordinator'];

export function coreRoutes(app: Api, { coordinator: baton }: ApiDeps): void {
  taskRoutes(app, baton);
  sessionRoutes(app, baton);
  claimRoutes(app, baton);
  jobRoutes(app, baton);
  clusterRoutes(app, baton);
}

/** `/v1/tasks`: add, list and show tasks. */
function taskRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/tasks',
      tags: ['tasks'],
      request: jsonBody(TaskAdd),
      responses: ok('the task, with its filesystem requirement and workspace'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'task:add', { what: `add task ${body.key}`, key: body.key });
      const { task, requirements } = await acting(context, () =>
        baton.workspaces.addTask({ ...body, by: actorOf(context) }),
      );
      const { requiresFilesystem, workspace } = requirements;
      return result(context, { ...task, requiresFilesystem, workspace });
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/tasks',
      tags: ['tasks'],
      request: {
        query: Query(['project', 'assignee', 'state', 'label', 'gated', 'blocked', 'after'], ['limit']),
      },
      responses: ok(
        'tasks by priority, then key, at most limit (default and maximum 1000); with after=KEY, the ' +
          'tasks after that one (the next page); 404 for a project or a label no task has, 400 for ' +
          'an after no task has',
      ),
    }),
    async (context) => result(context, await baton.listTasks(context.req.valid('query'))),
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/tasks/{key}',
      tags: ['tasks'],
      request: { params: z.object({ key: Key }) },
      responses: ok('the task with its holder, jobs, history and pull requests'),
    }),
    async (context) => {
      const detail = await baton.showTask(context.req.valid('param').key);
      const jobs = detail.jobs.map((job) => outputFor(context, job));
      return result(context, { key: detail.task.key, state: detail.task.state, ...detail, jobs });
    },
  );
}

/** `/v1/sessions`: start, list and end sessions. */
function sessionRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/sessions',
      tags: ['sessions'],
      request: jsonBody(SessionStart),
      responses: ok('the session started'),
    }),
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'session:start', {
        what: `start a session on host ${body.host}`,
        host: body.host,
      });
      return result(
        context,
        await acting(context, () => baton.startSession({ ...body, pid: body.pid ?? 0 })),
      );
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/sessions',
      tags: ['sessions'],
      request: { query: Query(['live']) },
      responses: ok('sessions, oldest first'),
    }),
    async (context) =>
      result(context, await baton.listSessions({ liveOnly: context.req.valid('query').live === 'true' })),
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/sessions/{id}/end',
      tags: ['sessions'],
      request: {
        params: z.object({ id: Id }),
        body: { content: { 'application/json': { schema: SessionEndBody } }, required: false },
      },
      responses: ok(
        'the session, ended with its claims released; ended: false if it had already ended; ' +
          'jobsRequeued: the ids of the pull jobs it held, queued again. With operator: true, ' +
          'someone other than the session ends it: recorded as endReason operator, endedBy the token',
      ),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      await allow(
        context,
        baton,
        'session:end',
        { what: `end session ${id}`, session: id },
        sessionHost(baton, id),
      );
      const by = context.req.valid('json').operator === true ? actorOf(context) : undefined;
      const { session, ended, jobsRequeued } = await acting(context, () => baton.endSession(id, by));
      return result(context, { ...session, ended, jobsRequeued });
    },
  );
}

/** `/v1/claims`: claim, heartbeat and release. */
function claimRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/claims/{key}',
      tags: ['claims'],
      request: { params: z.object({ key: Key }), ...jsonBody(ClaimBody) },
      responses: ok('the claim, with granted: false when this session already held it'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const { session } = context.req.valid('json');
      return result(context, await claimAs(baton, askerOf(context), key, session));
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/claims/{key}/heartbeat',
      tags: ['claims'],
      request: { params: z.object({ key: Key }), ...jsonBody(HeartbeatBody) },
      responses: ok('the claim is still current'),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      const { session, epoch } = context.req.valid('json');
      const what = `heartbeat ${key} epoch ${epoch} for session ${session}`;
      await allow(context, baton, 'heartbeat', { what, key, session }, sessionHost(baton, session));
      const outcome = await acting(context, () => baton.heartbeat({ session, key, epoch }));
      if (!outcome.ok)
        throw fencedRefusal(key, String(epoch), outcome.current, outcome.sessionEnded, session);
      return result(context, { ok: true, session, key, epoch });
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/claims/{key}/release',
      tags: ['claims'],
      request: { params: z.object({ key: Key }), ...jsonBody(ReleaseBody) },
      responses: ok(
        "released; a run's own token releasing its run's claim done gets released: false and a message: " +
          'the claim is checked and kept, and the runner records the job done when the agent exits 0',
      ),
    }),
    async (context) => {
      const { key } = context.req.valid('param');
      return result(context, await releaseAs(baton, askerOf(context), { key, ...context.req.valid('json') }));
    },
  );
}

/** POST /v1/jobs's answer: the warning is coordinator/agent-command-wait.ts's (decision 0047). */
const ENQUEUED =
  '{created, job}; with warning when the job has no command and no live baton up has an --agent-command';

/** `/v1/jobs`: enqueue, list, show and cancel jobs. */
function jobRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs',
      tags: ['jobs'],
      request: jsonBody(Enqueue),
      responses: ok(ENQUEUED),
    }),
    async (context) => {
      const body = context.req.valid('json');
      await allow(context, baton, 'job:enqueue', { what: `enqueue a job for ${body.key}`, key: body.key });
      return result(context, await acting(context, () => baton.enqueue({ ...body, by: actorOf(context) })));
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/jobs',
      tags: ['jobs'],
      request: { query: Query(['status', 'key', 'progress'], ['limit', 'before']) },
      responses: ok(
        'jobs: running, claimed, queued in queue order, then the finished newest first; with progress=true, ' +
          'each with stalled, lastProgressAt and progress; with before=ID, only the finished jobs older than ' +
          'that id, newest first (the next page after one that ended at it)',
      ),
    }),
    async (context) => {
      const { progress, ...query } = context.req.valid('query');
      const jobs = (await baton.listJobs(query)).map((job) => outputFor(context, job));
      return result(context, progress === 'true' ? await withProgress(baton, jobs) : jobs);
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/jobs/{id}',
      tags: ['jobs'],
      request: { params: z.object({ id: Id }), query: Query(['progress']) },
      responses: ok('the job; with progress=true, with stalled, lastProgressAt and progress'),
    }),
    async (context) => {
      const job = outputFor(context, await baton.getJob(context.req.valid('param').id));
      return result(
        context,
        context.req.valid('query').progress === 'true' ? (await withProgress(baton, [job]))[0] : job,
      );
    },
  );
  app.openapi(
    route({
      method: 'post',
      path: '/v1/jobs/{id}/cancel',
      tags: ['jobs'],
      request: { params: z.object({ id: Id }) },
      responses: ok('the job, cancelled'),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      await allow(context, baton, 'job:cancel', { what: `cancel job ${id}`, jobId: id });
      const cancel = await acting(context, () => baton.cancelJob(id, actorOf(context)));
      if (!cancel.ok) {
        const message = `job ${id} is already ${cancel.job?.status ?? 'gone'}`;
        throw new Refusal('conflict', 'lost', message, 'nothing to cancel', { job: cancel.job });
      }
      return result(context, cancel.job);
    },
  );
}

/** The fleet at a glance, the leader, the hosts and the audit ledger. */
function clusterRoutes(app: Api, baton: Coordinator): void {
  app.openapi(
    route({
      method: 'get',
      path: '/v1/status',
      tags: ['cluster'],
      responses: ok('the leader, hosts, jobs by status, live claims and what waits for a person'),
    }),
    async (context) => result(context, await baton.status()),
  );
  app.openapi(
    route({ method: 'get', path: '/v1/leader', tags: ['cluster'], responses: ok("the dispatcher's leader") }),
    async (context) => result(context, await baton.cluster.leader()),
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/hosts',
      tags: ['cluster'],
      responses: ok('hosts with capacity, each live, silent or down on the database clock'),
    }),
    async (context) => result(context, await baton.cluster.hosts()),
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/audit',
      tags: ['ledger'],
      request: { query: Query(['key', 'type', 'token'], ['session', 'job', 'after', 'limit']) },
      responses: ok(
        'ledger rows, oldest first, each with the token that wrote it (`token`: only the rows of that token id); ' +
          '404 for a key no task has',
      ),
    }),
    async (context) => {
      const query = context.req.valid('query');
      return result(context, await baton.audit(query));
    },
  );
  app.openapi(
    route({
      method: 'get',
      path: '/v1/audit/follow',
      tags: ['ledger'],
      request: { query: Query(['key', 'type', 'wait'], ['session', 'job', 'after']) },
      responses: ok(
        '{entries, through}: settled ledger rows after `after` (none given: from the newest now), ' +
          'oldest first; waits up to `wait` (a duration, at most 20s) for one; ask again with after=through',
      ),
    }),
    // A client that hangs up stops the wait.
    async (context) =>
      result(context, await baton.auditFollow(context.req.valid('query'), context.req.raw.signal)),
  );
}
