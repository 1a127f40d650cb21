/**
 * Results as the adapters send them: every Instant field (createdAt, since, at, …) as an ISO
 * string. The CLI's --json and the HTTP API answer with the same shapes.
 */
import type { Instant } from '../core/time.js';

export function iso(instant: Instant): string {
  return new Date(instant).toISOString();
}

/**
 * Every field the domain types (src/core, the store port, the coordinator) declare as `Instant`:
 * these, and only these, are written as ISO strings. Kept equal to the declarations by
 * src/cli/output.test.ts, which also refuses a name declared `Instant` in one type and a plain number in
 * another (it could not be converted by name alone): declare a new time field as `Instant`.
 */
export const INSTANT_FIELDS: ReadonlySet<string> = new Set([
  'acquiredAt',
  'addedAt',
  'at',
  'before',
  'claimedAt',
  'committedAt',
  'createdAt',
  'cutoff',
  'endedAt',
  'expiresAt',
  'exportedAt',
  'finishedAt',
  'heartbeatAt',
  'lastAt',
  'lastBeatAt',
  'lastCutoff',
  'lastProgressAt',
  'leaseUntil',
  'now',
  'oldestAt',
  'oldestClaimHeartbeatAt',
  'oldestUnsealedAt',
  'prunedAt',
  'queuedAt',
  'recordedAt',
  'registeredAt',
  'releasedAt',
  'revokedAt',
  'runAfter',
  'sealedAt',
  'since',
  'stalledAt',
  'startedAt',
  'stateAt',
  'until',
  'updatedAt',
]);

/**
 * Fields whose value is the caller's own JSON (an effect's payload), passed through as it was
 * recorded: a `since` or `createdAt` inside it is the agent's, not an Instant, and a number there
 * that no date can hold (1e300) must not turn every later read of its task into a 500.
 */
export const OPAQUE_FIELDS: ReadonlySet<string> = new Set(['payload']);

/** A JSON-ready copy with every Instant field written as an ISO string. */
export function toWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toWire);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (OPAQUE_FIELDS.has(key)) out[key] = field;
    else out[key] = INSTANT_FIELDS.has(key) && typeof field === 'number' ? iso(field) : toWire(field);
  }
  return out;
}
