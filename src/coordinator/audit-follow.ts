/**
 * Following the ledger (`baton audit --follow`, `GET /v1/audit/follow`): rows as they are
 * written, in id order, never skipping one. A follower reads only settled rows, those up to the
 * id the store says no transaction in flight can still commit below (`audit.settled`), and moves
 * its cursor to that id, not past it: on PostgreSQL ids come from a sequence and commit out of
 * order, so id 12 can be visible while 11 is still in flight, and a cursor at 12 would never see
 * 11. It polls every FOLLOW_POLL_MS while nothing new matches: the store's wake-ups cover job
 * changes only on PostgreSQL, not every ledger row (decision 0027).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditEntry } from '../core/audit-event.js';
import { NotFoundError } from '../core/errors.js';
import { validateDuration } from '../core/validate.js';
import type { AuditListParams, Store } from '../store/store.js';
import { parseAudit } from './inputs.js';

/** The longest one call waits for a row: a follower asks again, within a client's request timeout. */
const AUDIT_FOLLOW_WAIT_MAX_MS = 20_000;
/** How often a waiting follower looks at the settled id: the latency the docs promise. */
const FOLLOW_POLL_MS = 250;
/** Rows one call returns at most; the next call goes on from the last of them. */
const FOLLOW_PAGE = 1000;

export interface AuditFollowInput {
  readonly key?: unknown;
  readonly session?: unknown;
  readonly job?: unknown;
  readonly type?: unknown;
  /** Rows with a larger id; without it, those after the newest id now (nothing old). */
  readonly after?: unknown;
  /** How long to wait for a matching row when none is there yet (a duration, at most 20 s). */
  readonly wait?: unknown;
}

export interface AuditFollowPage {
  /** Settled rows after `after` that match, oldest first (at most FOLLOW_PAGE). */
  readonly entries: readonly AuditEntry[];
  /** The id to go on from (the next call's `after`): every row up to it that matches was returned. */
  readonly through: number;
}

interface FollowParams {
  readonly filters: Omit<AuditListParams, 'afterId' | 'throughId' | 'limit'>;
  readonly after: number | undefined;
  readonly waitMs: number;
}

/** The filters and the start as `baton audit` checks them (parseAudit), and the wait. */
export function parseAuditFollow(input: AuditFollowInput): FollowParams {
  const { afterId, ...filters } = parseAudit(input); // no limit: AuditFollowInput has none
  const waitMs =
    input.wait === undefined ? 0 : validateDuration('wait', input.wait, 0, AUDIT_FOLLOW_WAIT_MAX_MS);
  return { filters, after: afterId, waitMs };
}

/**
 * The settled rows after `after` that match, waiting up to `wait` for one; none (with the cursor
 * moved on) when the time ran out or `signal` aborted. A task key no task has, at the start (no
 * `after`), is a typo: NotFoundError, as `baton audit` says.
 */
export async function followAudit(
  store: Store,
  input: AuditFollowInput,
  signal?: AbortSignal,
): Promise<AuditFollowPage> {
  const { filters, after: start, waitMs } = parseAuditFollow(input);
  if (start === undefined && filters.key !== undefined && (await store.tasks.get(filters.key)) === null) {
    throw new NotFoundError('task', filters.key, 'add it with `baton task add`');
  }
  const deadline = Date.now() + waitMs;
  // Not the settled id: a fresh horizon that meets a writer in flight knows none settled yet (0),
  // and a follower started then printed the whole ledger. Rows in flight below the newest id now
  // count as before the start.
  let after = start ?? (await store.observe.auditMaxId());
  for (;;) {
    const settled = await store.audit.settled();
    const entries =
      settled > after
        ? await store.audit.list({ ...filters, afterId: after, throughId: settled, limit: FOLLOW_PAGE })
        : [];
    // A full page may stop short of `settled`: go on from its last row.
    const through = entries.length === FOLLOW_PAGE ? (entries.at(-1)?.id ?? after) : Math.max(after, settled);
    const left = deadline - Date.now();
    if (entries.length > 0 || left <= 0 || signal?.aborted === true) return { entries, through };
    after = through;
    await sleep(Math.min(left, FOLLOW_POLL_MS), undefined, signal ? { signal } : {}).catch(() => undefined);
  }
}
