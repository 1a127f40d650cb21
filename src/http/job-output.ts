/**
 * A job's output (its log, and the lines the database keeps of it, `outputTail`) may hold what its
 * agent saw: a token reads it only where `job:log` allows (an agent token its own job's alone,
 * core/token.ts). Reads that answer whole jobs pass them through `outputFor`, and the dashboard's
 * job page asks `mayReadOutput` before it shows a log.
 */
import type { Context } from 'hono';
import type { Job } from '../core/job.js';
import { authorize, type Token } from '../core/token.js';
import type { AuthEnv } from './auth.js';

/**
 * Whether this request's token may read the output of the job's current attempt (`current`), or of
 * an earlier one, which another agent's session ran; no token passed the read gate already.
 */
export function mayReadOutput(
  token: Token | null,
  job: Pick<Job, 'agentSession' | 'session' | 'key'>,
  current = true,
): boolean {
  if (token === null) return true;
  const session = current ? (job.agentSession ?? job.session) : null;
  return authorize(token, 'job:log', { session, key: job.key }).ok;
}

/** The job as this request may see it: without its output's tail where its token may not read it. */
export function outputFor<J extends Job>(context: Context<AuthEnv>, job: J): J {
  if (job.outputTail === null || mayReadOutput(context.get('token'), job)) return job;
  return { ...job, outputTail: null };
}
