/** Reads what the database knows of the dispatcher's previous term, for the new leader's line. */
import type { AuditEntry } from '../core/audit-event.js';
import { DISPATCHER_LEASE } from '../core/lease.js';
import { succession, type Predecessor } from '../core/succession.js';
import type { Store } from '../store/store.js';

/** The leases' ledger rows looked through for the previous term (newest first), per window. */
const RECENT = 100;
/**
 * The ledger is looked through this many ids at a time, newest first, with a turn of the event
 * loop between two windows: no index serves a type, and a term that began long ago lies behind
 * the whole ledger since (on SQLite, one unbounded read of a million rows held the loop 120-190 ms).
 */
const WINDOW_IDS = 50_000;

/** The newest row of `type` for the lease's `term` with an id in (floorId, topId], or null. */
async function termRow(
  store: Store,
  type: 'lease:acquired' | 'lease:resigned',
  term: number,
  floorId: number,
  topId: number,
): Promise<AuditEntry | null> {
  for (let top = topId; top > floorId; top -= WINDOW_IDS) {
    const afterId = Math.max(floorId, top - WINDOW_IDS);
    const rows = await store.audit.list({
      type,
      newestFirst: true,
      limit: RECENT,
      afterId,
      beforeId: top + 1,
    });
    const found = rows.find((row) => row.epoch === term && row.detail['name'] === DISPATCHER_LEASE);
    if (found !== undefined) return found;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return null;
}

async function sessionEnd(store: Store, holder: string): Promise<Predecessor['session']> {
  if (!/^\d+$/.test(holder)) return null;
  const session = await store.sessions.get(Number(holder));
  if (session === null) return null;
  if (session.state === 'live') return 'live';
  if (session.state === 'stale') return 'rescued';
  // Ended by an operator: whether it stepped down is the lease's word (resigned or not).
  if (session.endReason === 'operator' || session.endReason === 'rescued') return 'ended';
  return session.endReason ?? 'ended';
}

/** `, after session 7, which died (…)` or `…, which stepped down`; empty for term 1 or on no record. */
export async function afterPredecessor(store: Store, term: number): Promise<string> {
  if (term <= 1) return '';
  const [newest] = await store.audit.list({ newestFirst: true, limit: 1 });
  const top = newest?.id ?? 0;
  const acquired = await termRow(store, 'lease:acquired', term - 1, 0, top);
  const holder = acquired?.detail['holder'];
  if (acquired === null || typeof holder !== 'string') return '';
  const resigned = (await termRow(store, 'lease:resigned', term - 1, acquired.id, top)) !== null;
  return succession({ holder, resigned, session: await sessionEnd(store, holder) });
}
