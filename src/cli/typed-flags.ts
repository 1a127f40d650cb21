/**
 * A refusal names the flag as the user typed it. The coordinator's checks are shared with the
 * HTTP API, so they name a value by its field: `wait must be from 0 s to 5 m`, `session id must
 * be a whole number`. On the command line that value came from a flag, and the message says so:
 * `--wait must be …`, `--session must be …`. Only bad input (exit 2) whose message starts with a
 * field named here is reworded, and only when the call gave that flag; a session id given as an
 * argument (`baton heartbeat abc`) keeps its words. Over HTTP the server's message is reworded
 * the same way, so both modes print the same line.
 */
import { BatonError } from '../core/errors.js';

/**
 * The field as a message starts with it, and the flag it comes from (the first of them the call
 * gave, where two commands name it differently); the longer fields first.
 */
const FLAG_OF_FIELD: readonly (readonly [field: string, ...flags: string[]])[] = [
  ['job status filter', '--status'],
  ['workspace kind', '--kind'],
  ['session kind', '--kind'],
  ['session name', '--name'],
  ['token name', '--name'],
  ['job status', '--status'],
  ['task state', '--state'],
  ['audit type', '--type'],
  ['batch size', '--batch', '--next'],
  ['session id', '--session'],
  ['exit code', '--exit-code'],
  ['time limit', '--time-limit'],
  ['RAM (MB)', '--ram-mb'],
  ['after id', '--after'],
  ['job id', '--job'],
  ['assignee', '--assignee'],
  ['attempts', '--attempts'],
  ['department', '--department'],
  ['priority', '--priority'],
  ['workspace', '--workspace'],
  ['expires', '--expires'],
  ['outcome', '--outcome'],
  ['project', '--project'],
  ['review', '--review'],
  ['reason', '--reason'],
  ['status', '--status'],
  ['agent', '--agent'],
  ['epoch', '--epoch'],
  ['label', '--label'],
  ['lease', '--lease'],
  ['limit', '--limit'],
  ['scope', '--scope'],
  ['title', '--title'],
  ['body', '--body'],
  ['gate', '--gate'],
  ['host', '--host'],
  ['kind', '--kind'],
  ['note', '--note'],
  ['role', '--role'],
  ['url', '--url'],
  ['wait', '--wait'],
  ['pid', '--pid'],
  ['ttl', '--ttl'],
];

/** `error`, its message starting with the flag `args` gave instead of the field's name. */
export function namedAsTyped(error: unknown, args: readonly string[]): unknown {
  if (!(error instanceof BatonError) || error.code !== 'invalid_input') return error;
  const typed = (flag: string): boolean => args.some((arg) => arg === flag || arg.startsWith(`${flag}=`));
  const found = FLAG_OF_FIELD.find(([field]) => error.message.startsWith(`${field} `));
  const flag = found?.slice(1).find(typed);
  if (found === undefined || flag === undefined) return error;
  error.message = `${flag}${error.message.slice(found[0].length)}`;
  return error;
}
