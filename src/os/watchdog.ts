/**
 * The agents' watchdog, from the runner's side: a real-time timer that pings, over a pipe, every
 * process that keeps this runner's agents (each agent's shim, agent-shim.ts, and the reaper of a
 * cgroup runner, reaper.ts). Each of them kills the agents it keeps when no ping comes for its
 * deadline, the trust window (stale-after minus two heartbeat intervals,
 * core/heartbeat-windows.ts): a runner that stops running (SIGSTOP, a long GC pause, swapped
 * out) cannot kill its agents itself, and recovery may hand their work on once it is stale.
 *
 * The pings depend on nothing but this process's event loop running: not on the database (a
 * database outage with a live runner is the runner's own self-fence, runner.ts).
 */
import type { Writable } from 'node:stream';

/** The status a shim exits with when it killed its agent because no ping came (no sysexits meaning). */
export const SILENT_RUNNER_EXIT = 114;

export interface WatchdogOptions {
  /** How long a keeper waits for a ping before it kills its agents. */
  readonly deadlineMs: number;
  /** How often this process pings: well inside the deadline. */
  readonly pingIntervalMs: number;
  /** Told, once this process runs again, that it did not for longer than the deadline. */
  readonly onLate?: ((silentMs: number) => void) | undefined;
}

export class Pinger {
  private readonly channels = new Set<Writable>();
  private readonly timer: NodeJS.Timeout;
  private lastMs = performance.now();

  constructor(readonly options: WatchdogOptions) {
    this.timer = setInterval(() => this.ping(), options.pingIntervalMs);
    this.timer.unref();
  }

  /** Pings `channel` from now on (at once too), until it closes or is removed. */
  add(channel: Writable | null | undefined): void {
    if (channel == null) return;
    channel.on('error', () => this.channels.delete(channel));
    channel.once('close', () => this.channels.delete(channel));
    // A pipe to a keeper must not hold `baton up` open.
    (channel as unknown as { unref?: () => void }).unref?.();
    this.channels.add(channel);
    this.write(channel);
  }

  remove(channel: Writable | null | undefined): void {
    if (channel != null) this.channels.delete(channel);
  }

  close(): void {
    clearInterval(this.timer);
    this.channels.clear();
  }

  private ping(): void {
    const now = performance.now();
    const silentMs = now - this.lastMs;
    this.lastMs = now;
    if (silentMs > this.options.deadlineMs) this.options.onLate?.(silentMs);
    for (const channel of this.channels) this.write(channel);
  }

  private write(channel: Writable): void {
    if (channel.writable) channel.write('\n');
  }
}
