/**
 * Dates on the command line: an ISO 8601 date or time (`2026-01-31`, `2026-01-31T10:00`,
 * `2026-01-31T10:00:00Z`, `2026-01-31T10:00:00.5+02:00`; a time without a zone is local), or `30d` ago
 * (at most 36500d). Anything else, an impossible calendar date such as 2026-02-31 included, is refused:
 * Date.parse read `7` as 2001-07-01, `March 7` as 2001-03-07 and rolled 2026-02-31 into March.
 */
import { InvalidInputError } from '../core/errors.js';
import type { Instant } from '../core/time.js';
import { quoted } from '../core/text.js';

const DAY_MS = 86_400_000;
/** The most days ago a date may be given as: a hundred years. */
const MOST_DAYS = 36_500;
const FORMS =
  'give an ISO date or time such as 2026-01-31, 2026-01-31T10:00 (local) or 2026-01-31T10:00:00Z, ' +
  'or days ago such as 90d';
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-](?:\d{2}):(?:\d{2}))?)?$/i;

export function parseWhen(
  flag: string,
  raw: string | undefined,
  now: () => Instant = Date.now,
): Instant | undefined {
  if (raw === undefined) return undefined;
  const text = raw.trim();
  const ago = /^(\d+)d$/.exec(text);
  if (ago !== null) {
    const days = Number(ago[1]);
    if (days > MOST_DAYS) {
      throw new InvalidInputError(`${flag} ${quoted(raw)} is too far back`, `at most ${MOST_DAYS}d`);
    }
    return now() - days * DAY_MS;
  }
  const at = ISO.test(text) && isCalendarTime(text) ? Date.parse(text) : NaN;
  if (!Number.isFinite(at)) throw new InvalidInputError(`${flag} ${quoted(raw)} is not a date`, FORMS);
  return at;
}

/** The fields of an ISO-shaped text name a real day and time (no 2026-02-31, no 24:00, no +25:00). */
function isCalendarTime(text: string): boolean {
  const [, year, month, day, hour, minute, second, zone] = ISO.exec(text) ?? [];
  const monthDays = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  const zoneOk =
    zone === undefined ||
    zone.length === 1 ||
    (Number(zone.slice(1, 3)) <= 23 && Number(zone.slice(4)) <= 59);
  return (
    Number(month) >= 1 &&
    Number(month) <= 12 &&
    Number(day) >= 1 &&
    Number(day) <= monthDays &&
    Number(hour ?? 0) <= 23 &&
    Number(minute ?? 0) <= 59 &&
    Number(second ?? 0) <= 59 &&
    zoneOk
  );
}
