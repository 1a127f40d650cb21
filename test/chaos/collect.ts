/**
 * The server-side history, read through the store port once the run is over: the audit ledger
 * (one row per transition, written with it), the effects table, every claim, job, session and
 * task. Read the same way on both engines.
 */
import type { AuditEntry } from '../../src/core/audit-event.js';
import type { Claim } from '../../src/core/claim.js';
import type { Effect } from '../../src/core/effect.js';
import type { Job } from '../../src/core/job.js';
import type { Session } from '../../src/core/session.js';
import type { Store } from '../../src/store/store.js';

export interface ServerHistory {
  /** The whole ledger, in id order. */
  readonly ledger: readonly AuditEntry[];
  /** Every accepted effect, in id order. */
  readonly effects: readonly Effect[];
  readonly claims: readonly Claim[];
  readonly jobs: readonly Job[];
  readonly sessions: readonly Session[];
  /** The database clock when the history was read. */
  readonly readAt: number;
}

const ALL = 1_000_000;

export async function collectServer(store: Store): Promise<ServerHistory> {
  const ledger: AuditEntry[] = [];
  for (;;) {
    const page = await store.audit.list({ afterId: ledger.at(-1)?.id ?? 0, limit: 5000 });
    ledger.push(...page);
    if (page.length < 5000) break;
  }
  const tasks = await store.tasks.list({ limit: ALL });
  const claims: Claim[] = [];
  const effects: Effect[] = [];
  for (const t of tasks) {
    claims.push(...(await store.claims.history(t.key)));
    effects.push(...(await store.effects.list({ key: t.key, limit: ALL })));
  }
  effects.sort((a, b) => a.id - b.id);
  return {
    ledger,
    effects,
    claims,
    jobs: await store.jobs.list({ limit: ALL }),
    sessions: await store.sessions.list(),
    readAt: await store.now(),
  };
}

/** Groups items by a key, keeping their order. */
export function groupBy<T, K>(items: readonly T[], key: (item: T) => K | null): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    if (k === null) continue;
    const list = out.get(k);
    if (list === undefined) out.set(k, [item]);
    else list.push(item);
  }
  return out;
}
