/**
 * A lock is a session's exclusive use of a workspace for one run (the exclusive branch of a
 * WorkspacePlan). It works as a claim does: the database grants it in one guarded step, at most
 * one live lock exists per workspace (the lock table's primary key), every grant bumps the
 * workspace's lock epoch, and a release must present (session, epoch). The ledger keeps the
 * history: `lock:acquired` and `lock:released` rows carry the workspace, job and epoch.
 */
import type { JobId } from './job.js';
import type { SessionId } from './session.js';
import type { Instant } from './time.js';

export interface WorkspaceLock {
  readonly workspace: string;
  readonly session: SessionId;
  /** The run the lock was taken for, if any. */
  readonly jobId: JobId | null;
  /** Grows with every grant on this workspace; a release presents it. */
  readonly epoch: number;
  readonly acquiredAt: Instant;
}

/** Who holds a workspace, as told to a loser. */
export interface LockHolder {
  readonly session: SessionId;
  readonly host: string;
  readonly jobId: JobId | null;
  readonly since: Instant;
  readonly epoch: number;
}

export type LockResult =
  | {
      readonly ok: true;
      readonly lock: WorkspaceLock;
      /** false when this session already held it for this job. */
      readonly granted: boolean;
    }
  | { readonly ok: false; readonly reason: 'held'; readonly holder: LockHolder };

/** Outcome of a release presenting (session, epoch). */
export type LockReleaseResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'fenced'; readonly current: LockHolder | null };

/** How a lock ended: given back by its holder, or taken back from a dead or ended session. */
export type LockOutcome = 'released' | 'abandoned' | 'recovered';

/**
 * Why a run waits for a workspace, as `queue list` shows it: `waiting for workspace api, held by
 * job 7`; a lock taken outside any job names its session and host instead.
 */
export function waitingForWorkspace(
  workspace: string,
  holder: Pick<LockHolder, 'session' | 'host' | 'jobId'>,
): string {
  const by = holder.jobId === null ? `session ${holder.session} on ${holder.host}` : `job ${holder.jobId}`;
  return `waiting for workspace ${workspace}, held by ${by}`;
}
