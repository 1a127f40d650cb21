/**
 * Everything the CLI prints goes through here. Results go to stdout: JSON with --json, short
 * lines otherwise. Errors go to stderr as exactly one line, `baton: <message> — <hint>`, and with
 * --json also to stdout as `{"error", "message", "hint", ...}` so a script reads one stream.
 * Times are Instants (epoch ms) inside Baton and ISO strings on the way out.
 *
 * Whatever users wrote (keys, titles, reasons, names, commands) reaches the terminal through here,
 * so here is where it is made harmless: control and format characters are escaped (`\x1b`,
 * `\u202e`) in text and JSON alike, and database passwords are masked (core/redact.ts).
 */
import type { Holder } from '../core/claim.js';
import { redactSecrets } from '../core/redact.js';
import { escapeForTerminal, escapeJsonText } from '../core/text.js';
import type { Instant } from '../core/time.js';

export function iso(instant: Instant): string {
  return new Date(instant).toISOString();
}

/**
 * Every field the domain types (src/core, the store port, the coordinator) declare as `Instant`:
 * these, and only these, are written as ISO strings. Kept equal to the declarations by
 * output.test.ts, which also refuses a name declared `Instant` in one type and a plain number in
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
  'endedAt',
  'expiresAt',
  'exportedAt',
  'finishedAt',
  'heartbeatAt',
  'lastAt',
  'lastProgressAt',
  'now',
  'oldestClaimHeartbeatAt',
  'prunedAt',
  'queuedAt',
  'recordedAt',
  'registeredAt',
  'releasedAt',
  'runAfter',
  'sealedAt',
  'since',
  'stalledAt',
  'startedAt',
  'stateAt',
  'until',
  'updatedAt',
]);

/** A JSON-ready copy with every Instant field written as an ISO string. */
function toWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toWire);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    out[key] = INSTANT_FIELDS.has(key) && typeof field === 'number' ? iso(field) : toWire(field);
  }
  return out;
}

/** A value as JSON text that is safe on a terminal and carries no password. */
export function jsonText(value: unknown, indent?: number): string {
  return redactSecrets(escapeJsonText(JSON.stringify(toWire(value), null, indent)));
}

/** Lines as terminal text: each one escaped, with no password in it. */
export function terminalText(lines: string | readonly string[]): string {
  const all = typeof lines === 'string' ? lines.split('\n') : lines;
  return all.map((line) => redactSecrets(escapeForTerminal(line))).join('\n');
}

export function writeJson(value: unknown): void {
  process.stdout.write(`${jsonText(value, 2)}\n`);
}

export function writeLines(lines: string | readonly string[]): void {
  const text = terminalText(lines);
  if (text.length > 0) process.stdout.write(`${text}\n`);
}

export function writeErrorLine(message: string, hint: string | undefined): void {
  const line = hint === undefined || hint.length === 0 ? message : `${message} — ${hint}`;
  process.stderr.write(`baton: ${terminalText(line.replace(/\s*\n\s*/g, ' '))}\n`);
}

/** Prints a result: the value as JSON with --json, else the plain lines. */
export class Output {
  constructor(readonly json: boolean) {}

  result(value: unknown, plain: () => string | readonly string[]): void {
    if (this.json) writeJson(value);
    else writeLines(plain());
  }
}

/** Who holds a thing, in words: `session 7 on build-3 since 2025-…Z (epoch 3)`. */
export function describeHolder(holder: Holder): string {
  const { session, host, since, epoch } = holder;
  return `session ${session} on ${host} since ${iso(since)} (epoch ${epoch})`;
}

/** Left-aligned columns separated by two spaces; cells are cut at 60 characters. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  // Escaped before measuring, so a cell holding control characters keeps the columns aligned.
  const cut = (raw: string): string => {
    const cell = escapeForTerminal(raw);
    return cell.length > 60 ? `${cell.slice(0, 59)}…` : cell;
  };
  const all = [header, ...rows].map((row) => row.map(cut));
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** A nullable cell: `-` for nothing. */
export function cell(value: string | number | null | undefined): string {
  return value === null || value === undefined || value === '' ? '-' : String(value);
}
