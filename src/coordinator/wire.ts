/**
 * Results as the adapters send them: every Instant field (createdAt, since, at, …) as an ISO
 * string. The CLI's --json and the HTTP API answer with the same shapes.
 */
import type { Instant } from '../core/time.js';

export function iso(instant: Instant): string {
  return new Date(instant).toISOString();
}

// Instant-valued fields of the domain types: createdAt, since, at, expiresAt, ...
const INSTANT_KEY = /^(at|since)$|At$/;

/** A JSON-ready copy with every Instant field written as an ISO string. */
export function toWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toWire);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    out[key] = INSTANT_KEY.test(key) && typeof field === 'number' ? iso(field) : toWire(field);
  }
  return out;
}
