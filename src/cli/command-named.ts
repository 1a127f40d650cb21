/**
 * Which command a call names, read from its arguments alone: by the command tree (program.ts), to
 * register that command's module only, and by the launcher (launch.ts), to run the agent's bundle
 * when the command is one of an agent's. No imports: the launcher is bundled with this file.
 */

/** The program's options that take a value: the word after one is that value, not a command. */
const VALUE_OPTIONS: ReadonlySet<string> = new Set(['--db', '--api', '--token']);

/**
 * The command the arguments name, read as commander reads the words before it: the first word
 * that is neither a global option nor its value. Null when something else comes first (`--help`,
 * `--db=x`, `--`, an unknown option), or there is no command.
 */
export function commandNamed(args: readonly string[]): string | null {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] ?? '';
    if (arg === '--json') continue;
    if (VALUE_OPTIONS.has(arg)) index++;
    else return arg.startsWith('-') ? null : arg;
  }
  return null;
}

/**
 * The top-level commands of the agent's bundle (agent-commands.ts, which agent-commands.test.ts
 * holds to this list): what agents, their hooks and their scripts run over and over.
 */
export const AGENT_COMMAND_NAMES: ReadonlySet<string> = new Set([
  'session',
  'heartbeat',
  'claim',
  'release',
  'next',
  'reopen',
  'close',
  'escalate',
  'escalations',
  'resolve',
  'gate',
  'approve',
  'reject',
  'setting',
  'effect',
  'effects',
  'enqueue',
  'queue',
  'job',
  'cancel',
  'guard',
  'hooks',
  'hook',
  'hook-keeper',
]);
