/**
 * Input rules shared by every adapter. Each check returns the cleaned value or throws an
 * InvalidInputError whose message says what was wrong and whose hint says how to fix it.
 */
import { InvalidInputError } from './errors.js';
import { canonicalIssueKey } from './github.js';
import { codePointName, findInvisible, quoted } from './text.js';

export const KEY_LENGTH_MAX = 200;
export const TITLE_LENGTH_MAX = 500;
const NAME_LENGTH_MAX = 100;
export const LABEL_COUNT_MAX = 32;
const PRIORITY_MAX = 1000;
export const PRIORITY_DEFAULT = 100;
export const RAM_MB_MAX = 1_048_576;

// Visible characters only: `github:acme/api#1246`, `JIRA-12`, `local/refactor-auth`, `🚀-launch`.
// Refused by Unicode category (text.ts): controls, format characters such as U+202E or U+200B,
// and every separator, the ordinary space included.
const CONTROL = /\p{Cc}/u;

/** Refuses text with a character that does not show; says which one and where. */
function refuseInvisible(what: string, value: string, hint: string, allow = ''): void {
  const bad = findInvisible(value, allow);
  if (bad === null) return;
  throw new InvalidInputError(
    `${what} ${JSON.stringify(value)} contains ${bad.category} (${codePointName(bad.char)}) at position ${bad.index}`,
    hint,
  );
}

/**
 * One spelling per key or name: Unicode's NFC (canonical composition), so `café` typed with the
 * precomposed é (U+00E9) and with e + the combining acute (U+0301) name one task, one workspace,
 * one host. Not NFKC: compatibility folding changes what was written (`ﬁ` → `fi`, `²` → `2`,
 * full-width `Ａ` → `A`). Judged after it: the length, and the characters that do not show.
 * Keys stored before this rule in another form are reported by `baton doctor` (decision 0054).
 */
export function canonical(text: string): string {
  return text.normalize('NFC');
}

export function validateKey(given: unknown): string {
  if (typeof given !== 'string' || given.length === 0) {
    throw new InvalidInputError('task key is missing', 'give a key such as github:acme/api#1246');
  }
  const key = canonical(given);
  if (key.length > KEY_LENGTH_MAX) {
    throw new InvalidInputError(
      `task key is ${key.length} characters long; the limit is ${KEY_LENGTH_MAX}`,
      'use a shorter key',
    );
  }
  refuseInvisible('task key', key, 'use visible characters without spaces, such as github:acme/api#1246');
  // A GitHub issue's key in one spelling, as GitHub's names are case-insensitive (core/github.ts).
  return canonicalIssueKey(key);
}

export function validateTitle(title: unknown): string {
  if (typeof title !== 'string') throw new InvalidInputError('title must be text');
  if (title.length > TITLE_LENGTH_MAX) {
    throw new InvalidInputError(
      `title is ${title.length} characters long; the limit is ${TITLE_LENGTH_MAX}`,
      'shorten the title',
    );
  }
  if (CONTROL.test(title)) {
    throw new InvalidInputError('title contains control characters', 'remove them');
  }
  return refuseHalfCharacter('title', title);
}

/**
 * Free text such as a finish reason or a note: up to `max` characters, line breaks and tabs
 * allowed, no other control character (an escape sequence in a reason would act on every
 * terminal showing it). validateReason also refuses an empty one.
 */
export function validateText(what: string, value: unknown, max: number): string {
  if (typeof value !== 'string') throw new InvalidInputError(`${what} must be text`, `say it in a few words`);
  if (value.length > max) {
    throw new InvalidInputError(
      `${what} is ${value.length} characters long; the limit is ${max}`,
      `shorten the ${what}`,
    );
  }
  const bad = /[^\P{Cc}\n\t]/u.exec(value);
  if (bad !== null) {
    throw new InvalidInputError(
      `${what} contains the control character ${codePointName(bad[0])} at position ${bad.index}`,
      'remove it; line breaks and tabs are fine',
    );
  }
  return refuseHalfCharacter(what, value);
}

/**
 * Text whose every character is whole. A lone UTF-16 surrogate (half of a character, which only
 * JSON's \ud800 escape can carry in: a command line or a file decodes as UTF-8) would be stored as
 * U+FFFD by both engines, and fails PostgreSQL's jsonb where a ledger row's detail carries it.
 */
export function refuseHalfCharacter(what: string, value: string): string {
  const half = /\p{Cs}/u.exec(value);
  if (half !== null) {
    throw new InvalidInputError(
      `${what} holds half of a character (the lone surrogate ${codePointName(half[0])}) at position ${half.index}`,
      'send the whole character, or remove it',
    );
  }
  return value;
}

/** A reason or note someone must give (escalate, reject, reopen): validateText, and not empty. */
export function validateReason(what: string, value: unknown, max: number): string {
  if (value === undefined) throw new InvalidInputError(`${what} is required`, 'say why in a few words');
  if (typeof value === 'string' && value.trim().length === 0) {
    throw new InvalidInputError(`${what} is empty`, `say it in a few words`);
  }
  return validateText(what, value, max);
}

/** Project, assignee, host, workspace, agent and label names, in NFC as keys are (canonical). */
export function validateName(what: string, given: unknown): string {
  if (typeof given !== 'string' || given.trim().length === 0) {
    throw new InvalidInputError(`${what} is empty`, `give a non-empty ${what}`);
  }
  const value = canonical(given);
  if (value.length > NAME_LENGTH_MAX) {
    throw new InvalidInputError(
      `${what} is ${value.length} characters long; the limit is ${NAME_LENGTH_MAX}`,
      `use a shorter ${what}`,
    );
  }
  if (value !== value.trim()) {
    throw new InvalidInputError(
      `${what} ${JSON.stringify(value)} has surrounding spaces`,
      `write the ${what} without them`,
    );
  }
  refuseInvisible(what, value, `write the ${what} with visible characters (single spaces are fine)`, ' ');
  return value;
}

/**
 * The name a `baton up` gives its host: a name as validateName takes it, without spaces, since it
 * is typed in commands (`baton up --host`, `baton host enable`) and printed in their advice.
 */
export function validateHostName(value: unknown): string {
  const name = validateName('host', value);
  if (/\s/.test(name)) {
    throw new InvalidInputError(
      `host ${JSON.stringify(name)} contains a space`,
      'give a host name without spaces, such as box-1 (task keys take none either)',
    );
  }
  return name;
}

export function validateLabels(labels: readonly unknown[]): string[] {
  if (labels.length > LABEL_COUNT_MAX) {
    throw new InvalidInputError(`${labels.length} labels given; the limit is ${LABEL_COUNT_MAX}`);
  }
  const cleaned = labels.map((label) => validateName('label', label));
  return [...new Set(cleaned)].sort();
}

/** A whole number as Baton writes one in a URL: `0`, or digits from 1 without a leading zero. */
export const PLAIN_DIGITS = /^(0|[1-9][0-9]*)$/;

/** A whole number in [min, max], accepting numeric strings from the command line. */
export function validateInteger(what: string, value: unknown, min: number, max: number): number {
  const parsed = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isSafeInteger(parsed)) {
    throw new InvalidInputError(
      `${what} must be a whole number, got ${quoted(value)}`,
      `give a whole number from ${min} to ${max}`,
    );
  }
  if (parsed < min || parsed > max) {
    throw new InvalidInputError(
      `${what} must be from ${min} to ${max}, got ${parsed}`,
      `give a whole number from ${min} to ${max}`,
    );
  }
  return parsed;
}

export function validatePriority(value: unknown): number {
  return validateInteger('priority', value, 0, PRIORITY_MAX);
}

export function validateEpoch(value: unknown): number {
  return validateInteger('epoch', value, 1, Number.MAX_SAFE_INTEGER);
}

export function validateId(what: string, value: unknown): number {
  return validateInteger(`${what} id`, value, 1, Number.MAX_SAFE_INTEGER);
}

/** One of `allowed`; a value not given is said to be required. `hint`: how to give it, if the caller knows. */
export function validateOneOf<const T extends readonly string[]>(
  what: string,
  value: unknown,
  allowed: T,
  hint?: string,
): T[number] {
  if (value === undefined || value === null) {
    const choices =
      allowed.length < 2 ? allowed.join('') : `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
    throw new InvalidInputError(`${what} is required (${choices})`, hint);
  }
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw new InvalidInputError(`${what} must be one of ${allowed.join(', ')}, got ${quoted(value)}`, hint);
  }
  return value;
}

const DURATION_UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** A bound as a person writes it: the largest unit up to hours that gives a whole number (20 s, 5 m, 24 h). */
function durationText(ms: number): string {
  if (ms === 0) return '0 s';
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms} ms`;
}

/**
 * A duration such as `8h`, `90m`, `30s`, `500ms`, `1.5h`, `2d` or a bare number of seconds (`15`,
 * `0.5`, `.5`), in milliseconds within [minMs, maxMs].
 */
export function validateDuration(what: string, value: unknown, minMs: number, maxMs: number): number {
  const text = typeof value === 'number' ? String(value) : value;
  const match = typeof text === 'string' ? /^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h|d)?\s*$/.exec(text) : null;
  if (match === null) {
    throw new InvalidInputError(
      `${what} must be a duration such as 8h, 90m or 30s, got ${quoted(value)}`,
      'write a number followed by ms, s, m, h or d (a bare number is seconds)',
    );
  }
  const ms = Math.round(Number(match[1]) * (DURATION_UNIT_MS[match[2] ?? 's'] ?? 1000));
  if (ms < minMs || ms > maxMs) {
    throw new InvalidInputError(
      `${what} must be from ${durationText(minMs)} to ${durationText(maxMs)}, got ${quoted(value)}`,
      'pick a duration within that range',
    );
  }
  return ms;
}

/**
 * A web address a person may follow: http(s), no spaces, one URL parses. A task's url and a pr
 * effect's url are shown as links; a `javascript:`, `data:` or `file:` one never is.
 */
export function isWebAddress(text: string): boolean {
  if (text.length === 0 || /\s/.test(text)) return false;
  try {
    return ['http:', 'https:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** A token's id as `baton token list` shows it: 12 hexadecimal digits. */
export function validateTokenId(id: unknown): string {
  if (typeof id !== 'string' || !/^[0-9a-f]{12}$/.test(id)) {
    throw new InvalidInputError(
      `token id must be 12 hexadecimal digits, got ${JSON.stringify(id)}`,
      'copy the ID column of `baton token list`',
    );
  }
  return id;
}
