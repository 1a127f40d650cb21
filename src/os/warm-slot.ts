/**
 * A warm slot: one job scope's cgroups, made before any job needs them, with an agent's process
 * (launcher.ts) already forked into them and waiting for its command. The next job to start
 * adopts it (its memory budget is set then) instead of making its cgroups and moving a new
 * process into them on its way to the shell.
 *
 * Why: the kernel moves a process between cgroups under a lock (cgroup_threadgroup_rwsem) that
 * makes the mover wait for an RCU grace period unless another move happened just before. On an
 * idle runner every start paid it: 9-24 ms for the first `echo 0 > cgroup.procs`, 0.1-0.4 ms for
 * the ones right after (measured on this kernel, 6.18, cgroup v1 memory, pids and freezer). Here
 * the slot's process pays it while nothing waits for it.
 *
 * A slot's cgroups keep their own name (`slot-<n>`, and `slot-<n>-hooks`): cgroup v2 refuses to
 * rename a cgroup. The job is named by its agent's environment (BATON_RUN) and its log, as before.
 * A slot is under the runner's base cgroups like a job's, so the reaper kills it with the rest
 * when the runner dies, and the containment's close removes it. One slot is kept: it serves the
 * start of a job on an idle runner; a start that finds none (several at once) makes its scope as
 * before.
 */
import { CgroupJob, type Hierarchy } from './cgroup-scope.js';
import type { Launcher, WaitingAgent } from './launcher.js';

/**
 * The next slot is made as soon as the taken one's agent is told its command (or cancelled), so
 * the taking job's start never waits behind it; this is the latest, should neither happen.
 */
const REFILL_LATEST_MS = 1000;

/** A job's scope with its agent's process already waiting in it. */
export interface WarmScope {
  readonly scope: CgroupJob;
  readonly waiting: WaitingAgent;
}

export class WarmSlot {
  private ready: { readonly name: string; readonly scope: CgroupJob; readonly waiting: WaitingAgent } | null =
    null;
  private timer: NodeJS.Timeout | null = null;
  /** When the timer fires (performance.now() ms). */
  private dueAt = 0;
  private filling: Promise<void> | null = null;
  private made = 0;
  private closed = false;

  constructor(
    private readonly hierarchies: readonly Hierarchy[],
    private readonly launcher: Launcher,
  ) {
    this.refill(0);
  }

  /**
   * The slot, given job's budget and marker; null when none is ready (or the one there stopped
   * waiting, or its budget cannot be set: it is then dropped). The next slot is made once this
   * one's agent is started or cancelled.
   */
  take(ramMb: number | null, marker: string): WarmScope | null {
    const ready = this.ready;
    this.ready = null;
    this.refill(REFILL_LATEST_MS);
    if (ready === null) return null;
    const scope = new CgroupJob(this.hierarchies, ready.name, ramMb, marker);
    try {
      if (!ready.waiting.waiting()) throw new Error('its process no longer waits');
      scope.adopt();
    } catch {
      ready.waiting.cancel();
      void scope.close().catch(() => undefined);
      this.refill(0);
      return null;
    }
    const { waiting } = ready;
    const next = (): void => this.refill(0);
    return {
      scope,
      waiting: {
        start: (request) => waiting.start(request).finally(next),
        cancel: () => {
          waiting.cancel();
          next();
        },
        waiting: () => waiting.waiting(),
      },
    };
  }

  /** Drops the slot (its process ends, its cgroups go) and makes no other. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.filling;
    const ready = this.ready;
    this.ready = null;
    if (ready === null) return;
    ready.waiting.cancel();
    await ready.scope.close();
  }

  /** Makes the next slot in `delayMs`, or sooner if that was asked already; not while one is made. */
  private refill(delayMs: number): void {
    if (this.closed || this.filling !== null) return;
    const due = performance.now() + delayMs;
    if (this.timer !== null) {
      if (this.dueAt <= due) return;
      clearTimeout(this.timer);
    }
    this.dueAt = due;
    this.timer = setTimeout(() => {
      this.timer = null;
      // Never a rejection left unhandled in `baton up`: a slot that cannot be made is no slot.
      this.filling = this.fill()
        .catch(() => undefined)
        .finally(() => (this.filling = null));
    }, delayMs);
    this.timer.unref();
  }

  private async fill(): Promise<void> {
    if (this.closed || this.ready !== null) return;
    const name = `slot-${++this.made}`;
    const scope = new CgroupJob(this.hierarchies, name, null, '');
    try {
      scope.create();
      const waiting = await this.launcher.prepare(scope.enterFiles());
      if (waiting !== null && !this.closed) {
        this.ready = { name, scope, waiting };
        return;
      }
      waiting?.cancel();
    } catch {
      // A host that refuses the cgroups now: the next start makes its own scope, and says why.
    }
    await scope.close();
  }
}
