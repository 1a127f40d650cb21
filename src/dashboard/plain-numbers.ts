/**
 * The whole numbers of a dashboard address (a page's size, a keyset, a session or job id) are
 * written as Baton writes them, as the API reads them (http/kit.ts, decision 0055): `?limit=05`,
 * `/jobs/05`, `+5`, ` 5`, `5.0` or `1e1` are typos, refused naming the parameter (a 400 page), where
 * the coordinator's views, which also read the CLI's flags, would take them as 5. Ranges stay the
 * views' to check.
 */
import { InvalidInputError } from '../core/errors.js';
import { quoted } from '../core/text.js';
import { PLAIN_DIGITS } from '../core/validate.js';
import type { Query } from './deps.js';

/** The query parameters of the dashboard's views that hold a whole number. */
const NUMBER_PARAMETERS = ['limit', 'before', 'after', 'session', 'job'] as const;

/** The views whose path parameter is a job's id. */
const JOB_ID_VIEWS: ReadonlySet<string> = new Set(['job', 'output']);

/** Throws InvalidInputError for the first number of the address not in plain digits. */
export function refuseOddNumbers(view: string, query: Query, param: string): void {
  if (JOB_ID_VIEWS.has(view) && param !== '') plain('the job id', param);
  for (const name of NUMBER_PARAMETERS) {
    const raw = query[name];
    if (raw !== undefined && raw !== '') plain(name, raw);
  }
}

function plain(name: string, raw: string): void {
  if (PLAIN_DIGITS.test(raw)) return;
  const meant = /^\s*\+?0*(\d+)\s*$/.exec(raw)?.[1];
  throw new InvalidInputError(
    `${name}: must be a whole number in plain digits (no sign, spaces, decimals, exponent or ` +
      `leading zeros), got ${quoted(raw)}`,
    meant === undefined ? 'write it as Baton prints it, such as 5' : `write it as ${meant}`,
  );
}
