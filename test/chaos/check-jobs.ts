/** Checkers over jobs: lifecycle, completion, attempts, and no lost work. */
import type { AuditEntry } from '../../src/core/audit-event.js';
import { isAllowedJobTransition, isTerminalJobState, type JobState } from '../../src/core/job.js';
import {
  Findings,
  showEntry,
  showLine,
  type CheckInput,
  type CheckResult,
  type ServerInput,
} from './check-types.js';
import { groupBy } from './collect.js';

/** Whether a `job:claimed` row's claim started its job in the same step (decision 0023). */
const startedByClaim = (e: AuditEntry): boolean => e.detail['started'] === true;

/**
 * The states a ledger row moves its job through, in order; none when it is not a transition. A
 * claim that started its job (`started: true`, decision 0023) is two: claimed, then running.
 */
function statesAfter(e: AuditEntry): JobState[] {
  switch (e.type) {
    case 'job:enqueued':
    case 'job:requeued':
      return ['queued'];
    case 'job:claimed':
      return startedByClaim(e) ? ['claimed', 'running'] : ['claimed'];
    case 'job:placed':
      return ['claimed'];
    case 'job:started':
      return ['running'];
    case 'job:finished':
      return [e.detail['status'] as JobState];
    case 'job:cancelled':
      return ['cancelled'];
    default:
      return [];
  }
}

/**
 * [4, 5] Every job change is an allowed transition of the lifecycle (core/job.ts), starting at
 * enqueue; a job ends at most once and then never moves; attempts never exceed the maximum; the
 * table's final state is the ledger's. An attempt is a claim whose agent started (job:spawned),
 * or the job's last claim: recovery gives back an attempt that never attached a pid (issue 14,
 * item 7), so a claim rescued before its spawn uses none.
 */
export function checkJobLifecycle({ server }: ServerInput): CheckResult {
  const f = new Findings();
  let checked = 0;
  const jobs = new Map(server.jobs.map((j) => [j.id, j]));
  for (const [id, events] of groupBy(server.ledger, (e) => e.jobId)) {
    let state: JobState | undefined;
    let last: AuditEntry | undefined;
    let claims = 0;
    let spawnedSinceClaim = true;
    let ends = 0;
    for (const e of events) {
      if (e.type === 'job:spawned') {
        spawnedSinceClaim = true;
        if (state !== 'running') f.add(`job ${id}: spawned while ${state ?? 'absent'}`, [showEntry(e)]);
        continue;
      }
      for (const next of statesAfter(e)) {
        checked++;
        const first = state === undefined;
        if (first ? e.type !== 'job:enqueued' : !isAllowedJobTransition(state as JobState, next)) {
          f.add(`job ${id}: ${state ?? 'nothing'} → ${next} is not an allowed transition`, [
            ...(last ? [showEntry(last)] : []),
            showEntry(e),
          ]);
        }
        if (next === 'claimed') {
          // The claim before this one used an attempt only if its agent started.
          if (!spawnedSinceClaim) claims--;
          claims++;
          spawnedSinceClaim = false;
        }
        if (isTerminalJobState(next)) ends++;
        if (ends > 1 && isTerminalJobState(next)) {
          f.add(`job ${id}: ended a second time`, [...(last ? [showEntry(last)] : []), showEntry(e)]);
        }
        [state, last] = [next, e];
      }
    }
    const job = jobs.get(id);
    if (job === undefined) {
      f.add(`job ${id} is in the ledger but not in the table`, []);
      continue;
    }
    if (claims > job.attemptMax || job.attempt > job.attemptMax) {
      f.add(`job ${id}: ${claims} attempts, maximum ${job.attemptMax}`, events.map(showEntry).slice(-6));
    }
    if (state !== job.status)
      f.add(`job ${id}: the table says ${job.status}, the ledger ${state ?? 'nothing'}`, []);
  }
  return f.result(
    'job-lifecycle',
    'Every job change is an allowed transition; at most one completion per job; ' +
      'attempts never exceed the maximum [4, 5]',
    checked,
  );
}

/**
 * [3] No lost work: every acknowledged enqueue exists and is terminal after the drain; one whose
 * outcome was unknown is absent or terminal; a refused one is absent. Every effect acknowledged
 * to a worker is in the effects table, none refused is, and none appears that nobody asked for.
 */
export function checkNoLostWork({ server, client }: CheckInput): CheckResult {
  const f = new Findings();
  let checked = 0;
  const jobsById = new Map(server.jobs.map((j) => [j.id, j]));
  const jobsByKey = groupBy(server.jobs, (j) => j.key);
  const outcome = new Map(client.filter((l) => l.phase !== 'invoke').map((l) => [`${l.pid}#${l.n}`, l]));
  for (const l of client) {
    if (l.op !== 'enqueue' || l.phase !== 'invoke') continue;
    checked++;
    const key = String(l['key']);
    const done = outcome.get(`${l.pid}#${l.n}`);
    const found = jobsByKey.get(key) ?? [];
    const window = [showLine(l), ...(done ? [showLine(done)] : [])];
    if (done?.phase === 'ok') {
      const job = jobsById.get(Number(done['job']));
      if (job === undefined || job.key !== key) {
        f.add(`acknowledged job ${String(done['job'])} (${key}) is lost`, window);
      } else if (!isTerminalJobState(job.status)) {
        f.add(`acknowledged job ${job.id} is still ${job.status} after the drain`, window);
      }
    } else if (done?.phase === 'fail') {
      if (found.length > 0) f.add(`refused enqueue of ${key} exists as job ${found[0]?.id}`, window);
    } else if (found.some((j) => !isTerminalJobState(j.status))) {
      f.add(`unknown enqueue of ${key} left a job that is not terminal`, window);
    }
  }
  for (const j of server.jobs) {
    checked++;
    if (!isTerminalJobState(j.status))
      f.add(`job ${j.id} (${j.key}) is still ${j.status} after the drain`, []);
  }
  const effectsById = new Map(server.effects.map((e) => [e.id, e]));
  const asked = new Map<string, (typeof client)[number]>();
  for (const l of client) {
    if (l.op !== 'effect' || l.phase === 'invoke') continue;
    asked.set(`${l.pid}#${l.n}`, l);
    checked++;
    if (l.phase === 'ok' && effectsById.get(Number(l['effect'])) === undefined) {
      f.add(`acknowledged effect ${String(l['effect'])} is not in the effects table`, [showLine(l)]);
    }
  }
  const invoked = new Set(
    client.filter((l) => l.op === 'effect' && l.phase === 'invoke').map((l) => `${l.pid}#${l.n}`),
  );
  for (const e of server.effects) {
    const p = e.payload as { pid?: number; n?: number; job?: number } | null;
    if (e.kind !== 'write') continue;
    const id = `${p?.pid ?? '?'}#${p?.n ?? '?'}`;
    const told = asked.get(id);
    if (!invoked.has(id)) f.add(`effect ${e.id} was never asked for (${JSON.stringify(e.payload)})`, []);
    else if (told?.phase === 'fail') {
      f.add(`effect ${e.id} was written although its writer was told it was refused`, [showLine(told)]);
    } else if (told?.phase === 'ok' && Number(told['effect']) !== e.id) {
      f.add(`effect ${e.id} was acknowledged as ${String(told['effect'])}`, [showLine(told)]);
    }
  }
  // SQLite: a worker killed while it held its effect's write transaction open (the `hold`
  // line) never got an answer; the transaction must have rolled back.
  const opId = (l: { pid: number; n: number }) => `${l.pid}#${l.n}`;
  const answered = new Set(client.filter((l) => l.op === 'effect' && l.phase !== 'invoke').map(opId));
  const payloads = server.effects.map((e) => e.payload as { pid?: number; n?: number } | null);
  const written = new Set(payloads.map((p) => `${p?.pid ?? '?'}#${p?.n ?? '?'}`));
  for (const h of client.filter((l) => l.op === 'hold' && !answered.has(opId(l)))) {
    checked++;
    if (written.has(opId(h)))
      f.add('an effect killed inside its write transaction was committed', [showLine(h)]);
  }
  return f.result(
    'no-lost-work',
    'Every acknowledged enqueue and effect exists (and each job is terminal after the drain); ' +
      'unknown ones are absent or terminal; refused ones, and writes killed inside their ' +
      'transaction, are absent [3]',
    checked,
  );
}
