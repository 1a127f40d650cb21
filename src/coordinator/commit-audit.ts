/**
 * `baton audit commits <repo> [<range>]`: checks each commit's Baton trailers against the ledger.
 * A stamp is possible when the task had a claim at that epoch, held by that session, the session
 * ran on that host, and the commit was made while the claim was live (committer time, within a
 * slack for the committer's clock and git's whole seconds). A commit made under an epoch that was
 * already fenced off (released, recovered, moved on) is impossible, as is a stamp naming another
 * session's claim or host. Commits without trailers are listed as such: a human's, or made
 * outside Baton.
 */
import { resolve } from 'node:path';
import type { Claim } from '../core/claim.js';
import type { Session } from '../core/session.js';
import type { Instant } from '../core/time.js';
import { InvalidInputError } from '../core/errors.js';
import { git, gitDirOf, gitFailureLine, isGitFailure } from '../os/git.js';
import type { Store } from '../store/store.js';
import { TRAILER_KEYS, type CommitStamp } from './commit-trailers.js';

export type CommitStatus = 'ok' | 'none' | 'impossible';

export interface CommitCheck {
  readonly commit: string;
  readonly committedAt: Instant;
  readonly subject: string;
  /** The stamp as read; null when the commit carries no Baton trailer. */
  readonly stamp: Partial<Record<(typeof TRAILER_KEYS)[number], string>> | null;
  readonly status: CommitStatus;
  readonly reasons: readonly string[];
}

export interface CommitAuditParams {
  readonly dir: string;
  readonly range?: string | undefined;
  /** Clock slack allowed around a claim's grant and release (ms). */
  readonly slackMs?: number;
}

const FIELD = '\x1f';
const RECORD = '\x1e';

function parseLog(
  out: string,
): { commit: string; committedAt: Instant; subject: string; trailers: string }[] {
  return out
    .split(RECORD)
    .map((record) => record.replace(/^\n/, ''))
    .filter((record) => record !== '')
    .map((record) => {
      const [commit = '', seconds = '0', subject = '', trailers = ''] = record.split(FIELD);
      return { commit, committedAt: Number(seconds) * 1000, subject, trailers };
    });
}

function stampOf(trailers: string): CommitCheck['stamp'] {
  const stamp: Record<string, string> = {};
  for (const line of trailers.split('\n')) {
    const match = /^(Baton-(?:Task|Session|Epoch|Host)):\s*(.*)$/i.exec(line.trim());
    const key = TRAILER_KEYS.find((trailer) => trailer.toLowerCase() === match?.[1]?.toLowerCase());
    if (match !== null && key !== undefined) stamp[key] = (match[2] ?? '').trim();
  }
  return Object.keys(stamp).length === 0 ? null : stamp;
}

function completeStamp(stamp: NonNullable<CommitCheck['stamp']>): CommitStamp | null {
  const [key, session, epoch, host] = TRAILER_KEYS.map((trailer) => stamp[trailer]);
  if (key === undefined || session === undefined || epoch === undefined || host === undefined) return null;
  const [sessionId, epochNumber] = [Number(session), Number(epoch)];
  return Number.isSafeInteger(sessionId) && Number.isSafeInteger(epochNumber)
    ? { key, session: sessionId, epoch: epochNumber, host }
    : null;
}

/** Why a complete stamp cannot be true, judged against the claims and sessions in the store. */
function judge(
  stamp: CommitStamp,
  at: Instant,
  claims: readonly Claim[],
  session: Session | null,
  slackMs: number,
  now: Instant,
): string[] {
  const reasons: string[] = [];
  const claim = claims.find((candidate) => candidate.epoch === stamp.epoch);
  if (claim === undefined) return [`${stamp.key} never had a claim at epoch ${stamp.epoch}`];
  if (claim.session !== stamp.session) {
    reasons.push(
      `epoch ${stamp.epoch} of ${stamp.key} was held by session ${claim.session}, not ${stamp.session}`,
    );
  }
  if (session === null) reasons.push(`session ${stamp.session} does not exist`);
  else if (session.host !== stamp.host) {
    reasons.push(`session ${stamp.session} ran on host ${session.host}, not ${stamp.host}`);
  }
  const iso = (instant: Instant): string => new Date(instant).toISOString();
  if (at + 1000 + slackMs < claim.claimedAt) {
    reasons.push(
      `committed at ${iso(at)}, before epoch ${stamp.epoch} was granted at ${iso(claim.claimedAt)}`,
    );
  }
  const end = claim.releasedAt ?? now;
  if (at - slackMs > end) {
    const next = claims.find((later) => later.epoch > stamp.epoch);
    const moved = next === undefined ? '' : `; epoch ${next.epoch} went to session ${next.session}`;
    reasons.push(
      `committed at ${iso(at)}, after epoch ${stamp.epoch} was fenced off ` +
        `(${claim.outcome ?? 'ended'} at ${iso(end)}${moved})`,
    );
  }
  return reasons;
}

/**
 * `git log` of the range (HEAD when none), read as revisions only: a range that git refuses, or
 * one that reads as an option or a path, is the caller's bad input (exit 2), not a conflict.
 */
async function commitLog(dir: string, format: string, range: string | undefined): Promise<string> {
  try {
    return await git(['log', `--format=${format}`, '--end-of-options', range ?? 'HEAD', '--'], { cwd: dir });
  } catch (error) {
    if (range === undefined || !isGitFailure(error)) throw error;
    throw new InvalidInputError(
      `${JSON.stringify(range)} is not a revision range of ${dir}: ${gitFailureLine(error)}`,
      'give one git log takes, such as main..HEAD or a commit id, or leave it out for HEAD',
    );
  }
}

export async function auditCommits(store: Store, params: CommitAuditParams): Promise<CommitCheck[]> {
  const dir = resolve(params.dir);
  await gitDirOf(dir, 'repository');
  const format = `%H${FIELD}%ct${FIELD}%s${FIELD}%(trailers:only,unfold)${RECORD}`;
  const log = parseLog(await commitLog(dir, format, params.range));
  const now = await store.now();
  const claims = new Map<string, readonly Claim[]>();
  const sessions = new Map<number, Session | null>();
  const checks: CommitCheck[] = [];
  for (const entry of log) {
    const base = { commit: entry.commit, committedAt: entry.committedAt, subject: entry.subject };
    const stamp = stampOf(entry.trailers);
    if (stamp === null) {
      checks.push({ ...base, stamp, status: 'none', reasons: [] });
      continue;
    }
    const complete = completeStamp(stamp);
    if (complete === null) {
      const absent = TRAILER_KEYS.filter((trailer) => stamp[trailer] === undefined).join(', ');
      const reasons = [`incomplete Baton trailers: ${absent || 'malformed numbers'}`];
      checks.push({ ...base, stamp, status: 'impossible', reasons });
      continue;
    }
    if (!claims.has(complete.key)) claims.set(complete.key, await store.claims.history(complete.key));
    if (!sessions.has(complete.session))
      sessions.set(complete.session, await store.sessions.get(complete.session));
    const reasons = judge(
      complete,
      entry.committedAt,
      claims.get(complete.key) ?? [],
      sessions.get(complete.session) ?? null,
      params.slackMs ?? 5_000,
      now,
    );
    checks.push({ ...base, stamp, status: reasons.length === 0 ? 'ok' : 'impossible', reasons });
  }
  return checks;
}
