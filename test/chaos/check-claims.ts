/**
 * Checkers over the server-side history of claims, effects and leases: linear scans of the
 * ledger grouped by task (or job, or lease). On one task, grants, releases and effects all lock
 * the task row before they draw their ledger ids, so the ledger's id order per task is their
 * commit order (docs/decisions/0005-chaos.md).
 */
import type { AuditEntry } from '../../src/core/audit-event.js';
import { Findings, showEntry, type ServerInput, type CheckResult } from './check-types.js';
import { groupBy } from './collect.js';

const byKey = (ledger: readonly AuditEntry[]) => groupBy(ledger, (e) => e.key);

/** [1] Epochs strictly increase per task, per job and per lease; none is issued twice. */
export function checkEpochs({ server }: ServerInput): CheckResult {
  const f = new Findings();
  let checked = 0;
  const increasing = (what: string, events: readonly AuditEntry[]) => {
    let prev: AuditEntry | undefined;
    for (const e of events) {
      checked++;
      if (prev !== undefined && (e.epoch ?? 0) <= (prev.epoch ?? 0)) {
        f.add(`${what}: epoch ${e.epoch} issued after ${prev.epoch}`, [showEntry(prev), showEntry(e)]);
      }
      prev = e;
    }
  };
  for (const [key, events] of byKey(server.ledger)) {
    increasing(
      `task ${key}`,
      events.filter((e) => e.type === 'claim:granted'),
    );
  }
  const jobs = groupBy(server.ledger, (e) => e.jobId);
  for (const [id, events] of jobs) {
    increasing(
      `job ${id}`,
      events.filter((e) => e.type === 'job:claimed' || e.type === 'job:placed'),
    );
  }
  const leases = groupBy(
    server.ledger.filter((e) => e.type === 'lease:acquired'),
    (e) => String(e.detail['name']),
  );
  for (const [name, events] of leases) increasing(`lease ${name}`, events);
  // The claims table and the ledger agree grant for grant.
  const granted = new Map<string, AuditEntry>();
  for (const e of server.ledger) if (e.type === 'claim:granted') granted.set(`${e.key}#${e.epoch}`, e);
  for (const c of server.claims) {
    checked++;
    const g = granted.get(`${c.key}#${c.epoch}`);
    if (g === undefined || g.session !== c.session) {
      f.add(
        `claim ${c.key}#${c.epoch} (session ${c.session}) has no matching ledger grant`,
        g ? [showEntry(g)] : [],
      );
    }
  }
  if (granted.size !== server.claims.length) {
    f.add(`${granted.size} grants in the ledger, ${server.claims.length} claims in the table`, []);
  }
  const invariant = 'Epochs strictly increase per task, per job and per lease; no epoch is issued twice [1]';
  return f.result('epochs', invariant, checked);
}

/**
 * [2] Once epoch e+1 of a task is granted, no accepted effect carries epoch e or below; every
 * accepted effect carries the live claim's session and epoch. Job transitions carry the job's
 * current epoch, and placements the dispatcher's current term.
 */
export function checkFencedWrites({ server }: ServerInput): CheckResult {
  const f = new Findings();
  let checked = 0;
  for (const [key, events] of byKey(server.ledger)) {
    let grant: AuditEntry | undefined;
    let release: AuditEntry | undefined;
    const grants: AuditEntry[] = [];
    for (const e of events) {
      if (e.type === 'claim:granted') [grant, release] = [e, undefined];
      if (e.type === 'claim:granted') grants.push(e);
      if (e.type === 'claim:released' && e.epoch === grant?.epoch) release = e;
      if (e.type !== 'effect:recorded') continue;
      checked++;
      const epoch = e.epoch ?? 0;
      if (grant === undefined || epoch < (grant.epoch ?? 0)) {
        const own = grants.find((g) => g.epoch === epoch);
        const newer = grants.find((g) => (g.epoch ?? 0) > epoch);
        f.add(
          `task ${key}: effect at epoch ${epoch} accepted after epoch ${newer?.epoch ?? '?'} was granted`,
          [...(own ? [showEntry(own)] : []), ...(newer ? [showEntry(newer)] : []), showEntry(e)],
        );
      } else if (epoch !== grant.epoch || e.session !== grant.session) {
        f.add(`task ${key}: effect by session ${e.session} at epoch ${epoch} under another claim`, [
          showEntry(grant),
          showEntry(e),
        ]);
      } else if (release !== undefined) {
        f.add(`task ${key}: effect at epoch ${epoch} accepted after its claim was released`, [
          showEntry(grant),
          showEntry(release),
          showEntry(e),
        ]);
      }
    }
  }
  // The effects table and the ledger agree effect for effect.
  const recorded = new Map<number, AuditEntry>();
  for (const e of server.ledger)
    if (e.type === 'effect:recorded') recorded.set(Number(e.detail['effect']), e);
  for (const x of server.effects) {
    const e = recorded.get(x.id);
    if (e === undefined || e.epoch !== x.epoch || e.session !== x.session || e.key !== x.key) {
      f.add(`effect ${x.id} (${x.key} epoch ${x.epoch}) disagrees with the ledger`, e ? [showEntry(e)] : []);
    }
  }
  if (recorded.size !== server.effects.length) {
    f.add(`${recorded.size} effects in the ledger, ${server.effects.length} in the table`, []);
  }
  checked += checkJobEpochs(server.ledger, f);
  return f.result(
    'fenced-writes',
    'No write is accepted under a superseded epoch or term: effects carry the live claim, job ' +
      "transitions the job's current epoch, placements the live dispatcher term [2]",
    checked,
  );
}

const JOB_WRITES = new Set(['job:started', 'job:spawned', 'job:finished', 'job:requeued']);

function checkJobEpochs(ledger: readonly AuditEntry[], f: Findings): number {
  let checked = 0;
  for (const [id, events] of groupBy(ledger, (e) => e.jobId)) {
    let claim: AuditEntry | undefined;
    for (const e of events) {
      if (e.type === 'job:claimed' || e.type === 'job:placed') claim = e;
      else if (JOB_WRITES.has(e.type)) {
        checked++;
        if (claim === undefined || e.epoch !== claim.epoch) {
          f.add(`job ${id}: ${e.type} at epoch ${e.epoch}, current ${claim?.epoch ?? 'none'}`, [
            ...(claim ? [showEntry(claim)] : []),
            showEntry(e),
          ]);
        }
      }
    }
  }
  let lease: AuditEntry | undefined;
  for (const e of ledger) {
    if (e.type === 'lease:acquired' && e.detail['name'] === 'dispatcher') lease = e;
    if (e.type !== 'job:placed') continue;
    checked++;
    if (lease === undefined || e.detail['term'] !== lease.epoch) {
      f.add(
        `job ${e.jobId}: placed under term ${String(e.detail['term'])}, current ${lease?.epoch ?? 'none'}`,
        [...(lease ? [showEntry(lease)] : []), showEntry(e)],
      );
    }
  }
  return checked;
}

/** [2] No two sessions hold one task at overlapping times, judged on what the database accepted. */
export function checkExclusiveClaims({ server }: ServerInput): CheckResult {
  const f = new Findings();
  let checked = 0;
  for (const [key, claims] of groupBy(server.claims, (c) => c.key)) {
    const sorted = [...claims].sort((a, b) => a.epoch - b.epoch);
    const live = sorted.filter((c) => c.releasedAt === null);
    if (live.length > 1)
      f.add(
        `task ${key}: ${live.length} live claims`,
        live.map((c) => JSON.stringify(c)),
      );
    for (let i = 1; i < sorted.length; i++) {
      const [a, b] = [sorted[i - 1], sorted[i]];
      if (a === undefined || b === undefined) continue;
      checked++;
      if (a.releasedAt === null || a.releasedAt > b.claimedAt) {
        f.add(`task ${key}: epoch ${b.epoch} granted while epoch ${a.epoch} was held`, [
          JSON.stringify(a),
          JSON.stringify(b),
        ]);
      }
    }
  }
  for (const [key, events] of byKey(server.ledger)) {
    let held: AuditEntry | undefined;
    for (const e of events) {
      if (e.type === 'claim:granted') {
        checked++;
        if (held !== undefined) {
          f.add(`task ${key}: granted again while epoch ${held.epoch} was held`, [
            showEntry(held),
            showEntry(e),
          ]);
        }
        held = e;
      } else if (e.type === 'claim:released') {
        if (held === undefined || e.epoch !== held.epoch || e.session !== held.session) {
          f.add(`task ${key}: release of epoch ${e.epoch} that was not the live claim`, [
            ...(held ? [showEntry(held)] : []),
            showEntry(e),
          ]);
        }
        held = undefined;
      }
    }
  }
  return f.result('exclusive-claims', 'No two sessions hold one task at overlapping times [2]', checked);
}
