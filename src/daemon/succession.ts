/** Reads what the database knows of the dispatcher's previous term, for the new leader's line. */
import { DISPATCHER_LEASE } from '../core/lease.js';
import { succession, type Predecessor } from '../core/succession.js';
import type { Store } from '../store/store.js';

/** The leases' ledger rows looked through for the previous term (newest first). */
const RECENT = 100;

async function termRow(store: Store, type: 'lease:acquired' | 'lease:resigned', term: number) {
  const rows = await store.audit.list({ type, newestFirst: true, limit: RECENT });
  return rows.find((row) => row.epoch === term && row.detail['name'] === DISPATCHER_LEASE) ?? null;
}

async function sessionEnd(store: Store, holder: string): Promise<Predecessor['session']> {
  if (!/^\d+$/.test(holder)) return null;
  const session = await store.sessions.get(Number(holder));
  if (session === null) return null;
  if (session.state === 'live') return 'live';
  if (session.state === 'stale') return 'rescued';
  return session.endReason ?? 'ended';
}

/** `, after session 7, which died (…)` or `…, which stepped down`; empty for term 1 or on no record. */
export async function afterPredecessor(store: Store, term: number): Promise<string> {
  if (term <= 1) return '';
  const acquired = await termRow(store, 'lease:acquired', term - 1);
  const holder = acquired?.detail['holder'];
  if (typeof holder !== 'string') return '';
  const resigned = (await termRow(store, 'lease:resigned', term - 1)) !== null;
  return succession({ holder, resigned, session: await sessionEnd(store, holder) });
}
