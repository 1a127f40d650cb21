/**
 * `baton doctor`'s verdicts: each check reads a fact (elsewhere: os/, the store) and is judged
 * here, so the thresholds live in one place with their reasons (docs/decisions/0030-doctor.md).
 * A check is `ok`, `warn` (Baton works, but something will bite), `fail` (something Baton needs
 * is missing or wrong), or `skip` (not run here, with why); every level but ok carries one line
 * saying how to fix it.
 */
import { diskLow } from './disk.js';
import type { DurationMs } from './time.js';
import { rowsText } from './text.js';

export type DoctorLevel = 'ok' | 'warn' | 'fail' | 'skip';

export interface DoctorCheck {
  /** Stable, for scripts: `database`, `schema`, `clock`, … */
  readonly id: string;
  readonly level: DoctorLevel;
  /** What the check found, in one line. */
  readonly found: string;
  /** How to fix it (a command or a doc section); null when ok. */
  readonly fix: string | null;
}

export function check(id: string, level: DoctorLevel, found: string, fix: string | null = null): DoctorCheck {
  return { id, level, found, fix: level === 'ok' ? null : fix };
}

/** Above this, a skew shows in what people and log files read against the ledger's times. */
const CLOCK_WARN_MS: DurationMs = 1_000;
/**
 * Above this, it misleads: log-file times (a runner's files, stamped by this clock) and a
 * person's reading of `--since` or of a report no longer line up with the ledger's times, which
 * are the database's, and misorder events a heartbeat (2 s) apart. Still a warning, not a
 * failure: claims, leases, heartbeats and TTLs are judged on the database clock and are not
 * affected by it, so nothing Baton needs is wrong (decision 0030).
 */
const CLOCK_FAR_MS: DurationMs = 5_000;

const CLOCK_FIX =
  'sync this machine (and the database server) with NTP: `timedatectl set-ntp true` or chrony; ' +
  'docs/decisions/0030-doctor.md#clock';

/**
 * This machine's clock against the database's: `skewMs` is the database's time minus the middle
 * of the round trip that read it, `roundTripMs` that round trip; half of it is the uncertainty,
 * which is given the benefit of the doubt.
 */
export function judgeClock(skewMs: DurationMs, roundTripMs: DurationMs): DoctorCheck {
  const beyond = Math.max(0, Math.abs(skewMs) - roundTripMs / 2);
  const way = skewMs > 0 ? 'behind' : 'ahead of';
  const apart = Math.round(Math.abs(skewMs));
  const found =
    (apart === 0
      ? "this machine's clock agrees with the database's"
      : `this machine's clock is ${apart} ms ${way} the database's`) +
    ` (round trip ${Math.round(roundTripMs)} ms)`;
  if (beyond > CLOCK_FAR_MS)
    return check(
      'clock',
      'warn',
      `${found}: claims and leases are judged on the database clock and are not affected, but log-file ` +
        "times and what a person reads against the ledger are this machine's, and misorder events seconds apart",
      CLOCK_FIX,
    );
  if (beyond > CLOCK_WARN_MS) return check('clock', 'warn', found, CLOCK_FIX);
  return check('clock', 'ok', found);
}

/** On SQLite the database's clock is this process's (the file is read here): they cannot disagree. */
export function sqliteClock(): DoctorCheck {
  return check(
    'clock',
    'ok',
    "SQLite: the database's clock is this machine's (the file is read here), so they cannot disagree",
  );
}

/** Under this much free space (MB) a log or the SQLite file can no longer be written. */
const DISK_FAIL_MB = 100;

/** Free space where Baton writes (`what`: the database, logs, worktrees) at `dir`. */
export function judgeDisk(
  what: string,
  dir: string,
  disk: { readonly freeMb: number; readonly totalMb: number } | null,
): DoctorCheck {
  if (disk === null)
    return check('disk', 'skip', `${what}: ${dir} cannot be read (statfs)`, 'check the path');
  const share = disk.totalMb === 0 ? 0 : Math.round((disk.freeMb / disk.totalMb) * 100);
  const found = `${what} at ${dir}: ${disk.freeMb} MB free of ${disk.totalMb} MB (${share}%)`;
  const fix =
    'free space on that file system: `baton up --log-keep-mb` caps the logs, `baton audit prune` the ledger';
  if (disk.freeMb < DISK_FAIL_MB) return check('disk', 'fail', found, fix);
  if (diskLow(disk.freeMb, disk.totalMb)) return check('disk', 'warn', `${found}: low`, fix);
  return check('disk', 'ok', found);
}

/** The oldest version of git whose commands Baton's worktrees and `audit commits` use. */
export const GIT_MINIMUM = '2.25';

/** `2.39.5` from `git version 2.39.5`, null when there is no version in it. */
function gitVersionOf(text: string): string | null {
  return /(\d+\.\d+(?:\.\d+)?)/.exec(text)?.[1] ?? null;
}

/** Whether dotted version `version` is at least `minimum`. */
function versionAtLeast(version: string, minimum: string): boolean {
  const have = version.split('.').map(Number);
  const want = minimum.split('.').map(Number);
  for (let index = 0; index < Math.max(have.length, want.length); index++) {
    const mine = have[index] ?? 0;
    const theirs = want[index] ?? 0;
    if (mine !== theirs) return mine > theirs;
  }
  return true;
}

/** `git --version`'s answer, or null when git is not on PATH. */
export function judgeGit(answer: string | null): DoctorCheck {
  const fix = `install git ${GIT_MINIMUM} or later (worktrees per claim, \`baton audit commits\`)`;
  if (answer === null) return check('git', 'fail', 'git is not on PATH', fix);
  const version = gitVersionOf(answer);
  if (version === null)
    return check('git', 'warn', `git answered ${JSON.stringify(answer)}: no version in it`, fix);
  if (!versionAtLeast(version, GIT_MINIMUM))
    return check('git', 'fail', `git ${version} is older than ${GIT_MINIMUM}`, fix);
  return check('git', 'ok', `git ${version}`);
}

/** A row waiting longer than this for its seal means the sealer is not keeping up (the alert's 10 min). */
const SEAL_LAG_WARN_MS: DurationMs = 10 * 60_000;

export interface LedgerFacts {
  readonly keys: number;
  readonly unsealedRows: number;
  /** How long the oldest unsealed row has waited, on the database clock; null when none waits. */
  readonly oldestUnsealedAgeMs: DurationMs | null;
  /** Whether this machine holds a key file a leading `baton up` here would seal with. */
  readonly keyFileHere: boolean;
  /** The key in that file when the ledger retired it (`baton ledger retire`), and its row. */
  readonly keyFileRetired?: { readonly keyId: string; readonly row: number } | null;
}

/** What a host whose key file holds a retired key does (doctor, and `baton up`'s start line). */
export const RETIRED_KEY_FIX =
  "point --ledger-key (or BATON_LEDGER_KEY) at the current key's file (`baton ledger key` lists the keys), " +
  'or add a new key with `baton ledger init --rotate --key-file FILE` and point it there; then restart baton up';

export function judgeLedger(facts: LedgerFacts, ageText: (ms: DurationMs) => string): DoctorCheck {
  const waiting =
    facts.oldestUnsealedAgeMs === null
      ? 'no row waits for a seal'
      : `${rowsText(facts.unsealedRows)} unsealed, the oldest for ${ageText(facts.oldestUnsealedAgeMs)}`;
  const here = facts.keyFileHere ? 'a key file is here' : 'no key file here';
  if (facts.keys === 0)
    return check(
      'ledger',
      'warn',
      `no ledger key registered: the ledger is append-only but never sealed (${rowsText(facts.unsealedRows)} unsealed)`,
      'run `baton ledger init` on a host that may lead, then restart its `baton up` (docs/security.md)',
    );
  const retired = facts.keyFileRetired ?? null;
  if (retired !== null)
    return check(
      'ledger',
      'warn',
      `${facts.keys} key(s) registered; the key file here holds key ${retired.keyId}, which the ledger retired ` +
        `(row ${retired.row}): a baton up with it seals nothing; ${waiting}`,
      RETIRED_KEY_FIX,
    );
  const found = `${facts.keys} key(s) registered, ${here}; ${waiting}`;
  if (facts.oldestUnsealedAgeMs !== null && facts.oldestUnsealedAgeMs > SEAL_LAG_WARN_MS)
    return check(
      'ledger',
      'warn',
      `${found}: sealing lags (only a leading \`baton up\` with the key file seals)`,
      'give the leading `baton up` the key file (--ledger-key, .baton/ledger.key), or run `baton audit seal`',
    );
  return check('ledger', 'ok', found);
}
