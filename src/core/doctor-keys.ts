/**
 * `baton doctor`'s `keys` check: task keys stored before keys were NFC (decision 0054). Every key
 * given since is composed (validateKey), so a key stored in another form can no longer be named:
 * its task, claim and job stand, but no command reaches it by key. Two stored keys that are one
 * key in NFC are the double work the rule prevents, already done. Read only; nothing is renamed
 * or merged here: which of two tasks is the real one is a person's call.
 */
import { check, type DoctorCheck } from './doctor.js';
import { canonical } from './validate.js';

/** The keys beyond ASCII read at most (store.tasks.keysBeyondAscii's limit). */
export const KEYS_READ = 10_000;
/** Keys named in the check's line at most; the count says how many more. */
const NAMED = 3;

const FIX =
  'rename each to its NFC form while no claim on it is live, or, for a pair, rename one apart and ' +
  'close the one not wanted (docs/decisions/0054-unicode-keys.md shows the statement)';

export interface KeysFacts {
  /** The stored keys beyond ASCII, oldest task first (at most KEYS_READ). */
  readonly beyondAscii: readonly string[];
  /** Which of the given NFC forms, all ASCII, are stored keys (a read of those alone). */
  readonly asciiStored: ReadonlySet<string>;
}

/** The NFC forms of not-NFC keys that are ASCII: the only partners the beyond-ASCII read cannot show. */
export function asciiPartners(beyondAscii: readonly string[]): string[] {
  return beyondAscii.map(canonical).filter((form) => /^[\x20-\x7e]*$/.test(form));
}

function named(keys: readonly string[]): string {
  const shown = keys.slice(0, NAMED).map((key) => JSON.stringify(key) + escapedIfNeeded(key));
  return keys.length > NAMED ? `${shown.join(', ')} and ${keys.length - NAMED} more` : shown.join(', ');
}

/** `"café" (cafe\u0301)`: the code points, since both spellings look the same on a terminal. */
function escapedIfNeeded(key: string): string {
  const escaped = [...key]
    .map((ch) =>
      /[\x20-\x7e]/.test(ch) ? ch : `\\u${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`,
    )
    .join('');
  return ` (${escaped})`;
}

export function judgeKeys(facts: KeysFacts): DoctorCheck {
  const forms = new Map<string, string[]>();
  for (const key of facts.beyondAscii) {
    const form = canonical(key);
    forms.set(form, [...(forms.get(form) ?? []), key]);
  }
  for (const form of facts.asciiStored) forms.set(form, [form, ...(forms.get(form) ?? [])]);
  const pairs = [...forms.values()].filter((keys) => keys.length > 1);
  const stray = facts.beyondAscii.filter((key) => canonical(key) !== key);
  const read = facts.beyondAscii.length >= KEYS_READ ? ` (the first ${KEYS_READ} beyond ASCII read)` : '';
  if (pairs.length > 0) {
    const each = pairs.map((keys) => named(keys)).slice(0, NAMED);
    return check(
      'keys',
      'fail',
      `${pairs.length} set(s) of stored task keys are one key in NFC: ${each.join('; ')}${read}`,
      FIX,
    );
  }
  if (stray.length > 0) {
    return check(
      'keys',
      'warn',
      `${stray.length} stored task key(s) not in NFC, which no command can name now: ${named(stray)}${read}`,
      FIX,
    );
  }
  return check('keys', 'ok', `every stored task key is in NFC${read}`);
}
