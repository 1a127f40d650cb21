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
  reason: string,
  attemptCounts = true,
): { unstarted: boolean; givenBack: boolean; why: string } {
  const neverRan = job.status === 'claimed' || (job.term !== null && job.pid === null);
  const unstarted = lockOutcome === 'recovered' && neverRan;
  const why = reason + (unstarted ? ATTEMPT_NOT_COUNTED : attemptCounts ? '' : ATTEMPT_GIVEN_BACK);
  return { unstarted, givenBack: unstarted || !attemptCounts, why };
}

/**
 * What the sweep reads beside an orphaned job's row (both engines' ORPHANED_JOBS): whether its
 * runner's session is live (1/0 on SQLite; when it is, the agent's is not), and the agent session's last claim of
 * the job's task, its epoch and how it ended (null while it is live, or when the agent never held
 * one). A claim an operator force-released ends `released` too, but its run is cancelled in the
 * same commit (claims.forceRelease), so the sweep never meets it.
 */
export interface OrphanFacts {
  readonly key: string;
  readonly term: number | null;
  readonly session_id: number | null;
  readonly agent_session_id: number | null;
  readonly runner_live: boolean | number | null;
  readonly claim_epoch: number | null;
  readonly claim_outcome: string | null;
}

const isLive = (value: boolean | number | null): boolean => value === true || value === 1;

/**
 * Why the sweep took back a job whose lease has not passed: its runner's session is gone, or its
 * agent's is while the runner lives on, and then how the agent's claim ended, which is what ended
 * the run (decision 0060's amendment). It used to say `session N (agent M) is no longer live`
 * whichever had ended, naming a live runner as gone when the agent had released its own claim.
 */
export function orphanReason(job: OrphanFacts): string {
  const agent = job.agent_session_id;
  if (!isLive(job.runner_live)) {
    // A job taken in pull mode (no term) has no runner: its worker is the session that took it.
    const who = job.term === null ? 'session' : 'runner session';
    return `${who} ${job.session_id ?? '-'}${agent === null ? '' : ` (agent ${agent})`} is no longer live`;
  }
  const claim = `claim of ${job.key} at epoch ${job.claim_epoch ?? '-'}`;
  const gone = `agent session ${agent ?? '-'} is no longer live`;
  switch (job.claim_outcome) {
    case 'done':
    case 'failed':
    case 'released':
      return (
        `the agent (session ${agent ?? '-'}) released its ${claim} (${job.claim_outcome}) ` +
        'before its command exited'
      );
    case null:
      return `${gone} (its runner, session ${job.session_id ?? '-'}, is)`;
    default:
      return `${gone}: its ${claim} ended ${job.claim_outcome}`;
  }
}
