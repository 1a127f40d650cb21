/** Dates on the command line: an ISO date or time (`2026-01-31`, `2026-01-31T10:00:00Z`), or `30d` ago. */
import { InvalidInputError } from '../core/errors.js';
import type { Instant } from '../core/time.js';

const DAY_MS = 86_400_000;

export function parseWhen(
  flag: string,
  raw: string | undefined,
  now: () => Instant = Date.now,
): Instant | undefined {
  if (raw === undefined) return undefined;
  const ago = /^(\d+)d$/.exec(raw.trim());
  if (ago !== null) return now() - Number(ago[1]) * DAY_MS;
  const at = Date.parse(raw);
  if (!Number.isFinite(at)) {
    throw new InvalidInputError(
      `${flag} ${JSON.stringify(raw)} is not a date`,
      'give an ISO date or time such as 2026-01-31 or 2026-01-31T10:00:00Z, or days ago such as 90d',
    );
  }
  return at;
}
