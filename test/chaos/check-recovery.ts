/** Checkers that the faults bit, that recovery is bounded, and that clocks and busy files do not leak. */
import type { AuditEntry } from '../../src/core/audit-event.js';
import { TIMING } from './config.js';
import { Findings, showEntry, showLine, type CheckInput, type CheckResult } from './check-types.js';
import type { FaultEvent } from './nemesis.js';

/** A dead holder's work is back within the stale threshold, a sweep, one failover and slack. */
export const RESCUE_BOUND_MS =
  TIMING.staleAfterMs + TIMING.sweepMs + TIMING.leaseTtlMs + TIMING.retryMs + TIMING.slackMs;
/** A dead leader is replaced within its TTL, a standby's retry and slack. */
export const FAILOVER_BOUND_MS = TIMING.leaseTtlMs + TIMING.retryMs + TIMING.slackMs;

const fencedRefusals = (input: CheckInput) =>
  input.client.filter((l) => l.phase === 'fail' && l['reason'] === 'fenced');

/**
 * [6] The faults really happened: every fault kind was injected, sessions were rescued, the
 * leader changed, and the history shows fenced-off attempts, each refused for a claim (or
 * session) the database had indeed ended.
 */
export function checkFaultsBit(input: CheckInput): CheckResult {
  const f = new Findings();
  const injected = new Set(input.faults.filter((e) => e.phase === 'inject').map((e) => e.kind));
  for (const kind of input.kinds) if (!injected.has(kind)) f.add(`fault ${kind} was never injected`, []);
  const refusals = fencedRefusals(input);
  if (refusals.length === 0) f.add('no fenced-off attempt in the history', []);
  const stale = input.server.ledger.filter((e) => e.type === 'session:stale').length;
  if (stale === 0) f.add('recovery rescued no session', []);
  const terms = input.server.ledger.filter((e) => e.type === 'lease:acquired').length;
  if (terms < 2) f.add('the dispatcher leader never changed', []);
  const claims = new Map(input.server.claims.map((c) => [`${c.key}#${c.epoch}`, c]));
  const sessions = new Map(input.server.sessions.map((s) => [s.id, s]));
  for (const l of refusals) {
    const key = l['key'];
    if (typeof key === 'string' && typeof l['epoch'] === 'number') {
      const claim = claims.get(`${key}#${String(l['epoch'])}`);
      if (claim === undefined || claim.session !== l['session'] || claim.releasedAt === null) {
        f.add(`${l.op} refused as fenced while its claim was live`, [
          showLine(l),
          JSON.stringify(claim ?? null),
        ]);
      }
    } else if (sessions.get(Number(l['session']))?.state === 'live') {
      f.add(`${l.op} refused as fenced while its session was live`, [showLine(l)]);
    }
  }
  const byOp = new Map<string, number>();
  for (const l of refusals) byOp.set(l.op, (byOp.get(l.op) ?? 0) + 1);
  const notes = [
    `fenced-off attempts refused: ${[...byOp].map(([op, n]) => `${op} ${n}`).join(', ') || 'none'}`,
    `sessions rescued: ${stale}; dispatcher terms: ${terms}`,
  ];
  return f.result(
    'faults-bit',
    'The faults happened: every kind injected, rescues and failovers seen, every fenced-off ' +
      'attempt refused for a claim the database had ended [6]',
    input.kinds.length + refusals.length + 2,
    notes,
  );
}

/**
 * Whether a `baton up` process joined: the database holds a daemon session of its pid that beat.
 * Not a time since its spawn: on a loaded machine a start takes seconds, and a first join that
 * fails (the database restarting) exits loudly by design (daemon/up.ts).
 */
function hadJoined(input: CheckInput, pid: number | undefined): boolean {
  // A heartbeat after its start: the process got its join's answer and ran (a start whose answer
  // was lost to a dropped connection leaves a session the process never knew it had).
  return input.server.sessions.some(
    (s) => s.kind === 'daemon' && s.pid === pid && s.heartbeatAt > s.startedAt,
  );
}

/**
 * Whole-database disruptions (a restart, a kill inside a write, a process stopped holding SQLite's
 * write lock), and crashes of a candidate the nemesis did not cause.
 */
function excused(input: CheckInput, from: number, to: number): boolean {
  const outage = (e: FaultEvent) =>
    e.phase === 'inject' &&
    (e.kind === 'pg-restart' || e.kind === 'kill-in-write' || e.heldWriteLock === true) &&
    e.t >= from - 1000 &&
    e.t <= to;
  if (input.faults.some(outage)) return true;
  // A candidate that crashed on its own after it had joined (one that exits at start, its host
  // still served by its dead predecessor's session, never led and changes nothing).
  const killed = new Set(input.faults.filter((e) => e.pid !== undefined).map((e) => e.pid));
  return input.procs.some(
    (p) =>
      p.event === 'exit' &&
      p.slot.startsWith('up') &&
      !killed.has(p.pid) &&
      hadJoined(input, p.pid) &&
      p.t >= from &&
      p.t <= to,
  );
}

/**
 * [7] Bounded recovery: a session whose heartbeats stopped is rescued (claims released, jobs
 * requeued) within RESCUE_BOUND_MS of its last heartbeat; no dead session is left live; a
 * killed or paused leader is replaced within FAILOVER_BOUND_MS; and no `baton up` that had
 * joined dies of a fault it should ride out (the cluster must recover without a supervisor).
 */
export function checkBoundedRecovery(input: CheckInput): CheckResult {
  const f = new Findings();
  const { ledger } = input.server;
  let checked = 0;
  let skipped = 0;
  let worst = 0;
  const staleAt = new Map<number, AuditEntry>();
  const late = (what: string, lastBeat: number, e: AuditEntry) => {
    checked++;
    const ms = e.at - lastBeat;
    if (excused(input, lastBeat, e.at)) return void skipped++;
    worst = Math.max(worst, ms);
    if (ms > RESCUE_BOUND_MS) {
      f.add(`${what} ${ms} ms after the last heartbeat (bound ${RESCUE_BOUND_MS})`, [showEntry(e)]);
    }
  };
  for (const e of ledger) {
    if (e.type === 'session:stale' && e.session !== null) {
      staleAt.set(e.session, e);
      late(`session ${e.session} rescued`, Number(e.detail['heartbeatAt']), e);
    }
    if (e.type === 'job:requeued' && e.session !== null) {
      const stale = staleAt.get(e.session);
      if (stale !== undefined) late(`job ${e.jobId} requeued`, Number(stale.detail['heartbeatAt']), e);
    }
  }
  for (const s of input.server.sessions) {
    if (s.state === 'live' && input.server.readAt - s.heartbeatAt > RESCUE_BOUND_MS) {
      f.add(
        `session ${s.id} (${s.host}) silent for ${input.server.readAt - s.heartbeatAt} ms and never rescued`,
        [],
      );
    }
  }
  const killed = new Set(input.faults.filter((e) => e.pid !== undefined).map((e) => e.pid));
  for (const p of input.procs) {
    if (p.event !== 'exit' || !p.slot.startsWith('up') || killed.has(p.pid) || p.t > input.endedAt) continue;
    checked++;
    if (hadJoined(input, p.pid)) {
      f.add(`${p.slot} (pid ${p.pid}) exited by itself (code ${p.code ?? p.signal}) after it had joined`, [
        `${new Date(p.t).toISOString().slice(11)} ${p.slot} exit ${p.code ?? p.signal}`,
      ]);
    }
  }
  let worstFailover = 0;
  for (const fault of input.faults) {
    if (fault.phase !== 'inject' || (fault.kind !== 'kill-leader' && fault.kind !== 'pause-leader')) continue;
    const next = ledger.find((e) => e.type === 'lease:acquired' && (e.epoch ?? 0) > (fault.term ?? Infinity));
    checked++;
    if (next === undefined) {
      if (input.endedAt - fault.t > FAILOVER_BOUND_MS)
        f.add(`the leader ${fault.target} was never replaced`, []);
      continue;
    }
    if (excused(input, fault.t, next.at)) {
      skipped++;
      continue;
    }
    const ms = next.at - fault.t;
    worstFailover = Math.max(worstFailover, ms);
    if (ms > FAILOVER_BOUND_MS) {
      f.add(`leader ${fault.target} replaced ${ms} ms after ${fault.kind} (bound ${FAILOVER_BOUND_MS})`, [
        `${new Date(fault.t).toISOString().slice(11)} nemesis ${fault.kind} ${fault.target} term ${fault.term}`,
        showEntry(next),
      ]);
    }
  }
  const invariant =
    "A dead holder's work is back in the queue, and a dead leader replaced, within bounds; " +
    'no baton up dies of a fault [7]';
  return f.result('bounded-recovery', invariant, checked, [
    `worst rescue ${worst} ms (bound ${RESCUE_BOUND_MS}); ` +
      `worst failover ${worstFailover} ms (bound ${FAILOVER_BOUND_MS})`,
    `${skipped} measurements excused by a database-wide outage (restart, held write lock, stopped holding it) or an unplanned crash`,
  ]);
}

/**
 * [8] Client clock offsets change nothing: every time the database wrote is its own (within the
 * run, on the real clock), whatever the writer's clock said. The other checkers ran with the
 * offsets in force.
 */
export function checkClocks(input: CheckInput): CheckResult {
  const f = new Findings();
  const offsets = input.procs.filter((p) => p.event === 'spawn').map((p) => p.offsetMs ?? 0);
  // The window opens with the setup's writes, which precede the start by as long as the first
  // leader takes to be elected (over 5 s on a loaded CI machine).
  const [from, to] = [(input.setupAt ?? input.startedAt) - 5000, input.endedAt + 5000];
  for (const e of input.server.ledger) {
    if (e.at < from || e.at > to) {
      f.add(`ledger time ${new Date(e.at).toISOString()} lies outside the run`, [showEntry(e)]);
    }
  }
  const skewed = offsets.filter((o) => o !== 0);
  const invariant =
    "Client clock offsets change none of the above: every database time is the database's [8]";
  return f.result('clocks', invariant, input.server.ledger.length, [
    `${skewed.length} of ${offsets.length} processes ran with a clock offset, ` +
      `from ${Math.min(0, ...skewed)} ms to ${Math.max(0, ...skewed)} ms`,
  ]);
}

/** [9] SQLite: a busy database never surfaces as a failed operation; it is retried. */
export function checkBusy(input: CheckInput): CheckResult {
  const f = new Findings();
  const ops = input.client.filter((l) => l.phase !== 'invoke');
  for (const l of ops) if (l['busy'] === true) f.add(`${l.op} failed on a busy database`, [showLine(l)]);
  for (const line of input.upLogs) {
    if (/database is locked|stayed locked|SQLITE_BUSY/i.test(line)) f.add('busy in a baton up log', [line]);
  }
  const holds = input.faults.filter((e) => e.kind === 'kill-in-write' && e.phase === 'inject').length;
  return f.result('busy', 'A busy database never surfaces as a failed operation [9]', ops.length, [
    `${holds} processes killed inside BEGIN IMMEDIATE while the others waited for the lock`,
  ]);
}
