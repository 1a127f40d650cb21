/** The checker for exclusive workspace locks: never two holders of one workspace at a time. */
import type { AuditEntry } from '../../src/core/audit-event.js';
import { Findings, showEntry, type ServerInput, type CheckResult } from './check-types.js';
import { groupBy } from './collect.js';

/**
 * [1, 2] Per workspace, in ledger order (a grant bumps the workspace's lock epoch under its row
 * lock, and a release deletes the lock row the next grant must wait for): lock epochs strictly
 * increase, a lock is granted only while none is live, and only the live lock is released.
 */
export function checkExclusiveLocks({ server }: ServerInput): CheckResult {
  const f = new Findings();
  let checked = 0;
  const events = server.ledger.filter((e) => e.type === 'lock:acquired' || e.type === 'lock:released');
  for (const [workspace, list] of groupBy(events, (e) => String(e.detail['workspace']))) {
    let live: AuditEntry | undefined;
    let last: AuditEntry | undefined;
    for (const e of list) {
      checked++;
      if (e.type === 'lock:acquired') {
        if (live !== undefined) {
          f.add(`workspace ${workspace}: granted to session ${e.session} while held by ${live.session}`, [
            showEntry(live),
            showEntry(e),
          ]);
        }
        if (last !== undefined && (e.epoch ?? 0) <= (last.epoch ?? 0)) {
          f.add(`workspace ${workspace}: lock epoch ${e.epoch} after ${last.epoch}`, [
            showEntry(last),
            showEntry(e),
          ]);
        }
        [live, last] = [e, e];
      } else {
        if (live === undefined || e.epoch !== live.epoch || e.session !== live.session) {
          f.add(`workspace ${workspace}: released epoch ${e.epoch}, which was not the live lock`, [
            ...(live ? [showEntry(live)] : []),
            showEntry(e),
          ]);
        }
        live = undefined;
      }
    }
  }
  return f.result(
    'exclusive-locks',
    'No two runs hold one exclusive workspace at a time; lock epochs strictly increase [1, 2]',
    checked,
  );
}
