/** What every checker gets and gives back. */
import type { AuditEntry } from '../../src/core/audit-event.js';
import type { ServerHistory } from './collect.js';
import type { HistoryLine } from './history.js';
import type { FaultEvent, FaultKind } from './nemesis.js';
import type { ProcEvent } from './supervisor.js';

export interface CheckInput {
  readonly engine: 'sqlite' | 'postgres';
  readonly server: ServerHistory;
  /** Every worker's history lines, in file order per worker. */
  readonly client: readonly HistoryLine[];
  readonly faults: readonly FaultEvent[];
  readonly procs: readonly ProcEvent[];
  /** Lines of the `baton up` logs. */
  readonly upLogs: readonly string[];
  /** Real clock before the run's first write to the database (its setup: key, tasks, workspaces). */
  readonly setupAt?: number;
  /** Real clock at the start and end of the run. */
  readonly startedAt: number;
  readonly endedAt: number;
  /** The fault kinds this run was meant to inject. */
  readonly kinds: readonly FaultKind[];
}

/** What the checks that read only the database's history need: a scenario's CheckInput, or just that. */
export type ServerInput = Pick<CheckInput, 'server'>;

export interface Violation {
  readonly message: string;
  /** The smallest window of events that shows it, as printable lines. */
  readonly window: readonly string[];
}

export interface CheckResult {
  readonly name: string;
  /** The invariant, in one sentence (reliability.md numbering in brackets). */
  readonly invariant: string;
  /** How many items the scan judged. */
  readonly checked: number;
  /** Every violation found; `violations` shows the first few. */
  readonly count: number;
  readonly violations: readonly Violation[];
  readonly notes?: readonly string[];
}

/** One ledger row as a line. */
export function showEntry(e: AuditEntry): string {
  const parts = [
    `#${e.id}`,
    new Date(e.at).toISOString().slice(11),
    e.type,
    e.key ?? '',
    e.jobId === null ? '' : `job ${e.jobId}`,
    e.session === null ? '' : `session ${e.session}`,
    e.epoch === null ? '' : `epoch ${e.epoch}`,
    Object.keys(e.detail).length === 0 ? '' : JSON.stringify(e.detail),
  ];
  return parts.filter((p) => p !== '').join(' ');
}

/** One client history line as a line. */
export function showLine(l: HistoryLine): string {
  const { t, p, pid, n, op, phase, ...rest } = l;
  return `${new Date(t).toISOString().slice(11)} ${p}[${pid}] #${n} ${op} ${phase} ${JSON.stringify(rest)}`;
}

/** Collects violations, keeping at most `max` of each checker (the rest are counted). */
export class Findings {
  readonly violations: Violation[] = [];
  dropped = 0;

  constructor(private readonly max = 20) {}

  add(message: string, window: readonly string[]): void {
    if (this.violations.length < this.max) this.violations.push({ message, window });
    else this.dropped++;
  }

  result(name: string, invariant: string, checked: number, notes: readonly string[] = []): CheckResult {
    const more = this.dropped > 0 ? [`${this.dropped} more violations not shown`] : [];
    const count = this.violations.length + this.dropped;
    return { name, invariant, checked, count, violations: this.violations, notes: [...notes, ...more] };
  }
}
