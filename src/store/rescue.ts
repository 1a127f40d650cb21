/**
 * What both engines' rescue of stale sessions shares beside its SQL: the report a sweep fills in,
 * and why a rescued job is requeued or failed, with whether its attempt counts.
 */
import { ATTEMPT_GIVEN_BACK, ATTEMPT_NOT_COUNTED } from '../core/retry.js';
import type { LockOutcome } from '../core/workspace-lock.js';
import type { JobId } from '../core/job.js';
import type { RescueReport } from './dispatch-store.js';

/** A RescueReport while a sweep fills it in. */
export interface MutableReport extends RescueReport {
  sessions: number[];
  claimsReleased: number;
  locksReleased: number;
  jobsRequeued: number[];
  jobsFailed: number[];
}

export function emptyReport(): MutableReport {
  return { sessions: [], claimsReleased: 0, locksReleased: 0, jobsRequeued: [], jobsFailed: [] };
}

/** The columns of a job row the reason reads, as both engines name them. */
interface RescuedJob {
  readonly status: string;
  readonly session_id: number | null;
  readonly agent_session_id: number | null;
  readonly pid: number | null;
  readonly term: number | null;
}

/** Why a job whose lease passed was given back: by jobs.batch's take or by the leader's sweep. */
export const LEASE_EXPIRED = 'lease expired';

/** What sessions.end did, the same on both engines. */
export interface SessionEndReport {
  /** false when the session had already ended: then nothing was done and no job is named. */
  readonly ended: boolean;
  /**
   * The jobs it held in pull mode, queued again (ids ascending). None is failed: the session let
   * go, so the attempt is given back and requeueOrFail always requeues.
   */
  readonly jobsRequeued: readonly JobId[];
}

/** Why sessions.end gave back a job its session held in pull mode. */
export const sessionEnded = (session: number): string => `session ${session} ended`;

/**
 * Recovery gives back an attempt that never started anything: a placement (a dispatcher's term)
 * whose runner attached no agent, because a host that died after its placement must not use up
 * the job's attempts, and a job claimed but never started. A job a pull worker started (no term,
 * no pid: the worker is the agent) counts, as does a runner's own requeue after a crash: otherwise
 * a job whose worker dies on it every time would never run out of attempts. A runner's requeue
 * with `attemptCounts` false (it shut down gracefully) gives the attempt back: the agent did not
 * fail. `unstarted` asks the write to check that no agent was attached (pid still null);
 * `givenBack` says the attempt does not count, for either cause.
 */
export function rescueReason(
  job: RescuedJob,
  lockOutcome: LockOutcome,
  reason?: string,
  attemptCounts = true,
): { unstarted: boolean; givenBack: boolean; why: string } {
  const neverRan = job.status === 'claimed' || (job.term !== null && job.pid === null);
  const unstarted = lockOutcome === 'recovered' && neverRan;
  const why =
    (reason ?? `session ${job.session_id ?? '-'} (agent ${job.agent_session_id ?? '-'}) is no longer live`) +
    (unstarted ? ATTEMPT_NOT_COUNTED : attemptCounts ? '' : ATTEMPT_GIVEN_BACK);
  return { unstarted, givenBack: unstarted || !attemptCounts, why };
}
