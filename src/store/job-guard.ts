/**
 * The one home of a job holder's finish guard, as SQL both engines splice in (they differ only
 * in how they name parameters and the clock): the job is the holder's (session, epoch), it is in
 * a state the lifecycle lets it end from in the status asked for (core/job.ts FINISH_FROM), and
 * its lease, when it was taken under one (a batch), has not passed on the database clock. A
 * finish that matches nothing is `lost`: the job moved on, or its lease ran out (then the next
 * batch taken by anyone gives it back to the queue).
 */
import { ACTIVE_JOB_STATES, FINISH_FROM, HELD_JOB_STATES, TERMINAL_JOB_STATES } from '../core/job.js';

/** A list of states as an SQL list literal: ('a', 'b'). */
const sqlList = (states: readonly string[]): string => `(${states.map((state) => `'${state}'`).join(', ')})`;

export const ACTIVE_SQL = sqlList(ACTIVE_JOB_STATES);
export const HELD_SQL = sqlList(HELD_JOB_STATES);
export const TERMINAL_SQL = sqlList(TERMINAL_JOB_STATES);

/** SQL expressions a guard reads: the job row's name, and the caller's values. */
export interface JobGuardRefs {
  /** The job row (`jobs`, or an alias). */
  readonly job: string;
  readonly id: string;
  readonly session: string;
  readonly epoch: string;
  /** The state the holder asks to end the job in. */
  readonly status: string;
  /** The database clock, comparable with lease_until. */
  readonly now: string;
}

/** Whether the lease the job was taken under (if any) still holds at `now`. */
const leaseHolds = (job: string, now: string): string =>
  `(${job}.lease_until IS NULL OR ${job}.lease_until > ${now})`;

/** The WHERE condition of a holder's finish. */
export function finishGuard(refs: JobGuardRefs): string {
  const from = HELD_JOB_STATES.map(
    (state) => `(${refs.job}.status = '${state}' AND ${refs.status} IN ${sqlList(FINISH_FROM[state])})`,
  ).join(' OR ');
  return `${refs.job}.id = ${refs.id} AND ${refs.job}.session_id = ${refs.session} AND ${refs.job}.epoch = ${refs.epoch}
    AND (${from}) AND ${leaseHolds(refs.job, refs.now)}`;
}
