/**
 * `GET /v1/jobs/{id}/log`: a job's output from a byte offset, read from this server's log folder
 * (the runner's, for `baton up`; `.baton/logs` where `baton serve` started), else the database's
 * kept tail; with the next offset and whether the run has ended, so `baton job log --follow`
 * runs the same loop over HTTP as on the database (coordinator/job-log.ts). Output may hold what
 * an agent saw: an agent token reads its own job's alone (the `job:log` action, core/token.ts).
 */
import { z } from '@hono/zod-openapi';
import { parseJobLog } from '../coordinator/job-log.js';
import { allow } from './auth.js';
import { Id, QueryNumber, ok, result, route, type Api, type ApiDeps } from './kit.js';

const LogQuery = z.object({
  attempt: QueryNumber(1, Number.MAX_SAFE_INTEGER, 'the attempt (default the latest)').optional(),
  offset: QueryNumber(0, Number.MAX_SAFE_INTEGER, 'the byte to read from (default 0)').optional(),
  follow: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: "true: a queued job's coming attempt is meant (and may be asked for)" }),
});

export function logRoutes(app: Api, { coordinator: baton, logDir }: ApiDeps): void {
  app.openapi(
    route({
      method: 'get',
      path: '/v1/jobs/{id}/log',
      tags: ['jobs'],
      request: { params: z.object({ id: Id }), query: LogQuery },
      responses: ok(
        '{job, attempt, host, source (file, stream, database or none), file, offset, next, size, ended, note, data}: ' +
          'the bytes from offset to next, base64 in data (at most 1 MiB; next < size: read on at once); ' +
          'ended: the run is over and its log grows no more; note: where the whole log is, when not here',
      ),
    }),
    async (context) => {
      const { id } = context.req.valid('param');
      const query = context.req.valid('query');
      const params = parseJobLog(
        { ...query, id, follow: query.follow === 'true' },
        { attempt: 'attempt', tail: 'tail' },
      );
      const job = await baton.getJob(params.id);
      // An earlier attempt was another agent session's run: an agent token reads its own run's alone.
      const current = params.attempt === undefined || params.attempt === job.attempt;
      const subject = {
        what: `read the output of job ${job.id}${current ? '' : ` (attempt ${String(params.attempt)})`}`,
        session: current ? (job.agentSession ?? job.session) : null,
        key: job.key,
        jobId: job.id,
      };
      await allow(context, baton, 'job:log', subject);
      const { bytes, ...chunk } = await baton.jobLog(params, logDir);
      return result(context, { ...chunk, data: Buffer.from(bytes).toString('base64') });
    },
  );
}
