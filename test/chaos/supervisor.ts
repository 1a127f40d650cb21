/**
 * Starts the chaos processes (workers and `baton up` candidates), each with its own clock
 * offset, and starts them again when they die, as systemd's Restart=always would. Records every
 * spawn and exit for the report and for the recovery checker.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TIMING, WORKER_ENV, type WorkerConfig } from './config.js';
import type { Rng } from './prng.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const BIN = fileURLToPath(new URL('../../../bin/baton.js', import.meta.url));
const PRELOAD = join(HERE, 'clock-offset.js');
const WORKER = join(HERE, 'worker.js');

export type ProcKind = 'worker' | 'up';

export interface Proc {
  readonly slot: string;
  readonly kind: ProcKind;
  readonly generation: number;
  readonly pid: number;
  readonly offsetMs: number;
  readonly startedAt: number;
  child: ChildProcess;
  exited: boolean;
  pausedUntil: number;
}

export interface ProcEvent {
  readonly t: number;
  readonly slot: string;
  readonly event: 'spawn' | 'exit';
  readonly pid: number;
  readonly generation: number;
  readonly offsetMs?: number;
  readonly code?: number | null;
  readonly signal?: string | null;
}

export interface SupervisorOptions {
  readonly dir: string;
  readonly rng: Rng;
  /** The database URL a slot connects to (through its own proxy port on PostgreSQL). */
  readonly urlFor: (slot: string) => string;
  readonly worker: (slot: string, generation: number) => WorkerConfig;
  /** Largest clock offset, either way (ms). */
  readonly maxOffsetMs: number;
}

const UP_ARGS = [
  ...['--lease-ttl', String(TIMING.leaseTtlMs / 1000), '--retry-interval', String(TIMING.retryMs / 1000)],
  ...[
    '--heartbeat-interval',
    String(TIMING.heartbeatMs / 1000),
    '--stale-after',
    String(TIMING.staleAfterMs / 1000),
  ],
  ...['--slots', '2', '--ram-mb', '4096', '--reserved-mb', '0'],
  // Stopped at once, as before the drain (decision 0034): the chaos checks judge that stop.
  ...['--drain', '0'],
];

export class Supervisor {
  readonly events: ProcEvent[] = [];
  private readonly current = new Map<string, Proc>();
  private readonly generations = new Map<string, number>();
  private readonly stopping = new Set<ProcKind>();

  constructor(private readonly o: SupervisorOptions) {}

  start(slot: string, kind: ProcKind): Proc {
    const generation = (this.generations.get(slot) ?? 0) + 1;
    this.generations.set(slot, generation);
    const offsetMs = this.o.rng.chance(0.2) ? 0 : this.o.rng.between(-this.o.maxOffsetMs, this.o.maxOffsetMs);
    const log = openSync(join(this.o.dir, `${slot}.log`), 'a');
    const env: NodeJS.ProcessEnv = { ...process.env, CHAOS_CLOCK_OFFSET_MS: String(offsetMs) };
    let args: string[];
    if (kind === 'worker') {
      env[WORKER_ENV] = JSON.stringify(this.o.worker(slot, generation));
      env['BATON_UNSAFE_TEST_SWITCHES'] = '1';
      args = ['--import', PRELOAD, WORKER];
    } else {
      args = ['--import', PRELOAD, BIN, '--db', this.o.urlFor(slot), 'up', '--host', slot, ...UP_ARGS];
    }
    const child = spawn(process.execPath, args, { cwd: this.o.dir, env, stdio: ['ignore', log, log] });
    const proc: Proc = {
      slot,
      kind,
      generation,
      pid: child.pid ?? 0,
      offsetMs,
      startedAt: Date.now(),
      child,
      exited: false,
      pausedUntil: 0,
    };
    this.current.set(slot, proc);
    this.events.push({ t: Date.now(), slot, event: 'spawn', pid: proc.pid, generation, offsetMs });
    child.on('exit', (code, signal) => {
      proc.exited = true;
      this.events.push({ t: Date.now(), slot, event: 'exit', pid: proc.pid, generation, code, signal });
      if (this.stopping.has(kind) || this.current.get(slot) !== proc) return;
      setTimeout(
        () => {
          if (!this.stopping.has(kind) && this.current.get(slot) === proc) this.start(slot, kind);
        },
        this.o.rng.between(200, 1000),
      );
    });
    return proc;
  }

  get(slot: string): Proc | undefined {
    return this.current.get(slot);
  }

  all(kind?: ProcKind): Proc[] {
    return [...this.current.values()].filter((p) => kind === undefined || p.kind === kind);
  }

  /** Running, not paused, and up for at least `settledMs`. */
  healthy(slot: string, settledMs = 0): boolean {
    const p = this.current.get(slot);
    const now = Date.now();
    return p !== undefined && !p.exited && p.pausedUntil <= now && now - p.startedAt >= settledMs;
  }

  signal(slot: string, signal: NodeJS.Signals): Proc | null {
    const p = this.current.get(slot);
    if (p === undefined || p.exited) return null;
    try {
      process.kill(p.pid, signal);
    } catch {
      return null;
    }
    return p;
  }

  /** SIGCONT for everything paused. */
  resumeAll(): void {
    for (const p of this.current.values()) {
      if (p.pausedUntil > 0 && !p.exited) this.signal(p.slot, 'SIGCONT');
      p.pausedUntil = 0;
    }
  }

  /** Asks every process of a kind to stop (SIGTERM), then kills what is left after `graceMs`. */
  async stop(kind: ProcKind, graceMs: number): Promise<void> {
    this.stopping.add(kind);
    const procs = this.all(kind).filter((p) => !p.exited);
    for (const p of procs) {
      this.signal(p.slot, 'SIGCONT');
      this.signal(p.slot, 'SIGTERM');
    }
    const deadline = Date.now() + graceMs;
    while (procs.some((p) => !p.exited) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    for (const p of procs) if (!p.exited) this.signal(p.slot, 'SIGKILL');
    while (procs.some((p) => !p.exited)) await new Promise((r) => setTimeout(r, 50));
  }
}
