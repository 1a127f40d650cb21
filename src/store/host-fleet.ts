/**
 * The fleet read's rows as both engines' `hosts.fleet()` query returns them (one row per open
 * host, each carrying the fleet's counts; a single row with no name when none is open), and the
 * one mapping to the domain: the engines differ only in how a time arrives, which `instant` says.
 */
import { assert } from '../core/assert.js';
import type { Fleet } from '../core/capacity.js';
import type { Instant } from '../core/time.js';

export interface FleetRow<T> {
  hosts: number;
  enabled: number;
  last_beat_at: T | null;
  largest_budget_mb: number | null;
  name: string | null;
  heartbeat_at: T;
  ram_total_mb: number;
  ram_reserved_mb: number;
  ram_free_mb: number;
  slots_max: number;
  /** 0/1 on SQLite, a boolean on PostgreSQL; null: not said (an older runner). */
  agent_command: boolean | number | null;
  jobs_active: number;
  ram_promised_mb: number;
  ram_pending_mb: number;
}

export function fleetOfRows<T>(rows: readonly FleetRow<T>[], instant: (t: T) => Instant): Fleet {
  const [first] = rows;
  assert(first !== undefined, 'the fleet read answers one row at least');
  const open = rows
    .filter((row): row is FleetRow<T> & { name: string } => row.name !== null)
    .map((row) => ({
      name: row.name,
      enabled: true,
      heartbeatAt: instant(row.heartbeat_at),
      ramTotalMb: row.ram_total_mb,
      ramReservedMb: row.ram_reserved_mb,
      ramFreeMb: row.ram_free_mb,
      slotsMax: row.slots_max,
      jobsActive: row.jobs_active,
      ramPromisedMb: row.ram_promised_mb,
      ramPendingMb: row.ram_pending_mb,
      agentCommand: row.agent_command === null ? null : Boolean(row.agent_command),
    }));
  const lastBeatAt = first.last_beat_at === null ? null : instant(first.last_beat_at);
  const largestBudgetMb = first.largest_budget_mb === null ? null : Number(first.largest_budget_mb);
  return { open, hosts: first.hosts, enabled: first.enabled, lastBeatAt, largestBudgetMb };
}
