/**
 * `baton up`'s flags of amounts: its slots and RAM budget, and the cap and keeping of job logs.
 * Each is checked before the store opens, so a bad value makes no database file.
 */
import { InvalidInputError } from '../../core/errors.js';
import { RAM_MB_MAX, validateDuration, validateInteger } from '../../core/validate.js';
import { LOG_MAX_MB_DEFAULT } from '../../daemon/job-log.js';
import { readMemory } from '../../os/memory.js';
import { LOG_KEEP_DAYS_DEFAULT, LOG_KEEP_MB_DEFAULT } from '../../daemon/log-pruner.js';
import type { UpOptions } from '../../daemon/up.js';
import { UP_DEFAULTS } from '../../daemon/up-defaults.js';

interface CapacityFlags {
  readonly slots?: string;
  readonly ramMb?: string;
  readonly reservedMb?: string;
}

interface LogFlags {
  readonly logMaxMb?: string;
  readonly logKeepDays?: string;
  readonly logKeepMb?: string;
}

/** A positive amount from the command line (fractions allowed), times `unit`. */
function amount(
  what: string,
  raw: string | undefined,
  fallback: number,
  unit: number,
  example: string,
): number {
  if (raw === undefined) return fallback * unit;
  const parsed = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(parsed) || parsed <= 0 || parsed > 1e9) {
    throw new InvalidInputError(
      `${what} must be a number above 0, got ${JSON.stringify(raw)}`,
      `e.g. ${example}`,
    );
  }
  return Math.round(parsed * unit);
}

const MB = 1024 * 1024;

/** --log-keep-days: a bare number is days, as it always was; a duration with its unit (`12h`, `30d`) too. */
function keepAgeMs(raw: string | undefined): number {
  if (raw === undefined || !/[a-z]\s*$/i.test(raw)) {
    return amount('--log-keep-days', raw, LOG_KEEP_DAYS_DEFAULT, 86_400_000, '14, or 12h');
  }
  try {
    return validateDuration('--log-keep-days', raw, 1000, 36_500 * 86_400_000);
  } catch (error) {
    // validateDuration's hint says a bare number is seconds; for this flag it is days.
    if (!(error instanceof InvalidInputError)) throw error;
    throw new InvalidInputError(error.message, 'give a number of days (14) or a duration (12h, 30d)');
  }
}

/**
 * Slots and the RAM budget. A host that could never run a job (no slot, or a budget all reserve)
 * is refused rather than joined silently: `--standby` is how to join without taking work.
 */
export function capacityOf(
  flags: CapacityFlags,
): Pick<UpOptions, 'slotsMax' | 'ramTotalMb' | 'ramReservedMb'> {
  const noWork = 'to join without taking work, use --standby';
  if (flags.slots !== undefined && /^\s*0+\s*$/.test(flags.slots)) {
    throw new InvalidInputError('--slots 0 leaves the host no slot for any job', `give 1 or more; ${noWork}`);
  }
  const ramReservedMb =
    flags.reservedMb === undefined
      ? UP_DEFAULTS.ramReservedMb
      : validateInteger('--reserved-mb', flags.reservedMb, 0, RAM_MB_MAX);
  const ramTotalMb =
    flags.ramMb === undefined ? null : validateInteger('--ram-mb', flags.ramMb, 1, RAM_MB_MAX);
  if (ramTotalMb !== null && ramTotalMb <= ramReservedMb) {
    throw new InvalidInputError(
      `--ram-mb ${ramTotalMb} is not above --reserved-mb ${ramReservedMb}: no job could ever be given RAM`,
      `give --ram-mb above ${ramReservedMb}, or lower --reserved-mb; ${noWork}`,
    );
  }
  const machineMb = ramTotalMb === null ? readMemory().totalMb : null;
  if (machineMb !== null && machineMb <= ramReservedMb) {
    throw new InvalidInputError(
      `--reserved-mb ${ramReservedMb} is not below this machine's RAM (${machineMb} MB): ` +
        'no job could ever be given RAM',
      `give --reserved-mb below ${machineMb}; ${noWork}`,
    );
  }
  const slotsMax =
    flags.slots === undefined ? UP_DEFAULTS.slotsMax : validateInteger('--slots', flags.slots, 1, 1000);
  return { slotsMax, ramTotalMb, ramReservedMb };
}

/** The cap of each job's log and how long and how much of the logs are kept. */
export function logOptions(flags: LogFlags): Pick<UpOptions, 'logMaxBytes' | 'logKeep'> {
  return {
    logMaxBytes: amount('--log-max-mb', flags.logMaxMb, LOG_MAX_MB_DEFAULT, MB, '32 or 0.5'),
    logKeep: {
      maxAgeMs: keepAgeMs(flags.logKeepDays),
      maxBytes: amount('--log-keep-mb', flags.logKeepMb, LOG_KEEP_MB_DEFAULT, MB, '2048'),
    },
  };
}
