/**
 * `baton up --config FILE`: baton up's flags from a JSON file, for a systemd unit or a team's
 * shared settings, instead of a command line of thirty flags. Its keys are the flags without
 * `--` (`"slots": 4`, `"agent-env": ["ANTHROPIC_API_KEY"]`, `"http": false` for `--no-http`); a
 * flag on the command line wins over the file, and the file over the defaults. The database is
 * not one of them: it comes from --db, BATON_DB or the project, as for every command, so a file
 * never holds a password and never outranks the environment a unit sets.
 *
 * A file with anything wrong in it (unreadable, not JSON, a key that is no flag of baton up, a
 * value of the wrong kind) is bad input: one line naming the file and the key, exit 2, and
 * nothing started (commander's own parsing of the value, such as `collect`, runs as for a flag).
 */
import { readFileSync } from 'node:fs';
import type { Command, Option } from 'commander';
import { InvalidInputError } from '../../core/errors.js';

type Value = string | boolean | readonly string[];

/** Sets every flag `file` names that the command line did not, with the source `config`. */
export function applyUpConfig(command: Command, file: string): void {
  const entries = Object.entries(readConfig(file));
  const values = entries.map(([key, raw]) => flagValue(command, file, key, raw));
  // Every entry checked before any is set: a bad one changes nothing.
  for (const { option, value } of values) {
    const name = option.attributeName();
    const source = command.getOptionValueSource(name);
    if (source === 'cli' || source === 'env') continue;
    command.setOptionValueWithSource(name, value, 'config');
  }
}

function readConfig(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new InvalidInputError(`--config ${file} cannot be read (${code})`, 'give the path of a JSON file');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new InvalidInputError(`--config ${file} is not JSON: ${why}`, 'fix the file (JSON, no comments)');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new InvalidInputError(
      `--config ${file} must hold a JSON object`,
      'write {"flag-name": value, ...}, e.g. {"slots": 4}',
    );
  }
  return json as Record<string, unknown>;
}

/** The option `key` names in `file` and the value to give it, or the line saying why not. */
function flagValue(
  command: Command,
  file: string,
  key: string,
  raw: unknown,
): { option: Option; value: Value } {
  const wrong = (what: string): InvalidInputError =>
    new InvalidInputError(
      `--config ${file}: "${key}" ${what}`,
      'see `baton up --help` for the flags and their values',
    );
  const takesValue = command.options.find((option) => option.long === `--${key}` && !option.negate);
  const negated = command.options.find((option) => option.long === `--no-${key}`);
  if (key === 'config' || key === 'help' || (takesValue === undefined && negated === undefined)) {
    throw wrong(`is not a flag of baton up (its keys are the flags without --, e.g. "slots", "agent-env")`);
  }
  if (raw === false && negated !== undefined) return { option: negated, value: false };
  // A flag that is on unless turned off (--no-github-comments): true leaves it on.
  if (raw === true && negated !== undefined && takesValue === undefined)
    return { option: negated, value: true };
  const option = takesValue ?? negated;
  if (option === undefined || option.negate) throw wrong('takes false alone (it turns the flag off)');
  if (option.isBoolean()) {
    if (typeof raw !== 'boolean') throw wrong(`is a switch: give true or false, got ${JSON.stringify(raw)}`);
    return { option, value: raw };
  }
  const one = (item: unknown): string => {
    if (typeof item === 'string' || (typeof item === 'number' && Number.isFinite(item))) return String(item);
    throw wrong(`takes a string or a number, got ${JSON.stringify(item)}`);
  };
  if (!Array.isArray(raw)) return { option, value: parsed(option, [one(raw)]) };
  if (option.parseArg === undefined) throw wrong('takes one value, not a list');
  return { option, value: parsed(option, raw.map(one)) };
}

/** The value commander would give the flag named once per item (a repeatable flag collects them). */
function parsed(option: Option, items: readonly string[]): Value {
  const parse = option.parseArg as ((value: string, previous: unknown) => Value) | undefined;
  if (parse === undefined) return items[0] ?? '';
  let value: unknown = undefined;
  for (const item of items) value = parse(item, value);
  return value as Value;
}
