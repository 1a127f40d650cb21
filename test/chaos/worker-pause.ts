/**
 * How the nemesis (nemesis.ts) picks and stops a worker for `pause-worker`, so a pause can bite: the
 * resumed worker's first attempt under its rescued session is refused as fenced (accepted with
 * fencing off), the fenced-off attempt the faults-bit check [6] and the negative control need.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { tailLines, type HistoryLine } from './history.js';
import type { Rng } from './prng.js';
import { isStopped } from './sqlite-lock.js';
import type { Proc, Supervisor } from './supervisor.js';

/** The lines of one process (pid) of a slot's history, its predecessors' left out. */
function linesOf(path: string, pid: number | undefined): HistoryLine[] {
  return tailLines(path, 65536).filter((l) => l.pid === pid);
}

interface WorkerPool {
  readonly workers: readonly string[];
  readonly supervisor: Supervisor;
  readonly historyOf: (slot: string) => string;
  readonly rng: Rng;
}

/**
 * A healthy worker; for a pause, one whose process has begun its session (one stopped before that,
 * a restarted worker still loading on a loaded machine, has nothing to be fenced off from), inside
 * a claim when one is. Only the current process's lines count: a predecessor's last claim was left
 * by its unknown outcome.
 */
export function pickWorker(pool: WorkerPool, forPause: boolean): string | null {
  const { supervisor, historyOf, rng } = pool;
  const healthy = pool.workers.filter((w) => supervisor.healthy(w, 500));
  if (!forPause) return healthy.length === 0 ? null : rng.pick(healthy);
  const lines = (w: string) => linesOf(historyOf(w), supervisor.get(w)?.pid);
  const started = healthy.filter((w) => lines(w).some((l) => l.op === 'session.start' && l.phase === 'ok'));
  if (started.length === 0) return null;
  const holding = started.filter((w) => {
    const last = lines(w)
      .filter((l) => ['claim', 'effect', 'release'].includes(l.op))
      .at(-1);
    return last !== undefined && last.op !== 'release' && last.phase === 'ok';
  });
  return rng.pick(holding.length > 0 ? holding : started);
}

/**
 * Makes sure the stopped worker `p` is stopped between two requests. One stopped with a request in
 * flight lets that request's timeouts (the worker's 4 s, pg's 5 s `query_timeout`) run out during
 * the stop, and on waking Node runs them before it reads the answer that came meanwhile: the
 * worker records an unknown outcome and restarts without trying under its rescued session (CI76;
 * on a loaded machine, where requests are slow, most pauses did). As a pause outside SQLite's
 * write lock is made sure of (test/e2e/cluster-support.ts), a stop that finds a request in flight
 * is lifted and tried again, up to 50 times; the last one stands. Whether it found such a moment.
 */
export async function stopBetweenRequests(
  supervisor: Supervisor,
  p: Proc,
  history: string,
): Promise<boolean> {
  for (let tries = 0; ; tries++) {
    for (let i = 0; !isStopped(p.pid) && i < 50; i++) await sleep(2);
    if (!inFlight(linesOf(history, p.pid))) return true;
    if (tries >= 50 || p.exited) return false;
    supervisor.signal(p.slot, 'SIGCONT');
    await sleep(20);
    if (p.exited || supervisor.signal(p.slot, 'SIGSTOP') !== p) return false;
  }
}

/** Whether an operation was invoked and not yet answered. */
function inFlight(lines: readonly HistoryLine[]): boolean {
  const open = new Set<number>();
  for (const l of lines) {
    // A `hold` line (inside an effect's write) shares its effect's number and answers nothing.
    if (l.op === 'hold') continue;
    if (l.phase === 'invoke') open.add(l.n);
    else open.delete(l.n);
  }
  return open.size > 0;
}

/** The session the process's history last started, or null (it was still opening). */
export function sessionOf(path: string, pid: number): number | null {
  const start = linesOf(path, pid)
    .filter((l) => l.op === 'session.start' && l.phase === 'ok')
    .at(-1);
  return typeof start?.['session'] === 'number' ? start['session'] : null;
}
