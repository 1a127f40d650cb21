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
import { redactSecrets } from '../core/redact.js';
import { escapeForTerminal, escapeJsonText } from '../core/text.js';
import { writeErr, writeOut } from './stdio.js';
import { EXIT_USAGE, Exit } from './exit-codes.js';

export { INSTANT_FIELDS, iso, toWire } from '../coordinator/wire.js';
import { toWire } from '../coordinator/wire.js';

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
  writeOut(`${jsonText(value, 2)}\n`);
}

/** Human output: no line ends in blanks (a task without a title, a table's last column). */
function writeLines(lines: string | readonly string[]): void {
  const text = terminalText(lines)
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
  if (text.length > 0) writeOut(`${text}\n`);
}

export function writeErrorLine(message: string, hint: string | undefined): void {
  const line = hint === undefined || hint.length === 0 ? message : `${message} — ${hint}`;
  writeErr(`baton: ${terminalText(line.replace(/\s*\n\s*/g, ' '))}\n`);
}

/**
 * Refuses a call that asks for two output formats at once (`--json --csv`): one line on stderr
 * naming both flags, exit 2, and nothing on stdout, not even --json's error object, since which
 * format stdout should carry is the question.
 */
export function refuseTwoFormats(flags: readonly [string, string], hint: string): never {
  writeErrorLine(`${flags[0]} and ${flags[1]} ask for two output formats at once`, hint);
  throw new Exit(EXIT_USAGE);
}

/** Prints a result: the value as JSON with --json, else the plain lines. */
export class Output {
  constructor(readonly json: boolean) {}

  result(value: unknown, plain: () => string | readonly string[]): void {
    if (this.json) writeJson(value);
    else writeLines(plain());
  }
}

export { describeHolder } from '../coordinator/refusals.js';

/** Left-aligned columns separated by two spaces; cells are cut at 60 characters. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  // Escaped before measuring, so a cell holding control characters keeps the columns aligned.
  const cut = (raw: string): string => {
    const escaped = escapeForTerminal(raw);
    return escaped.length > 60 ? `${escaped.slice(0, 59)}…` : escaped;
  };
  const all = [header, ...rows].map((row) => row.map(cut));
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  return all.map((row) =>
    row
      .map((text, column) => text.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** A nullable cell: `-` for nothing. */
export function cell(value: string | number | null | undefined): string {
  return value === null || value === undefined || value === '' ? '-' : String(value);
}
