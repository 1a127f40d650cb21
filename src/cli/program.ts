/**
 * The command tree. Commander's own exits are turned into exceptions (exitOverride) and its error
 * text is silenced, so run-cli.ts prints every error the same way and usage errors exit 2.
 */
import { Command, type CommanderError } from 'commander';
import { InvalidInputError } from '../core/errors.js';
import { DEFAULT_DB } from '../store/open.js';
import { exitCodeHelp } from './exit-codes.js';
import { batonVersion } from './version.js';
import { commandNamed } from './command-named.js';
import type { CommandTable } from './command-table.js';

const DATABASE_HELP = `Database:
  --db <url> or the environment variable BATON_DB names the database; --db wins. Keep a
  password out of --db (every user can read a process's arguments): BATON_DB, PGPASSWORD or
  ~/.pgpass; \`baton up --agent-uids\` refuses it, and --token (use BATON_TOKEN), with exit 2.
  --api and --token (or BATON_URL and BATON_TOKEN) reach Baton over its HTTP API instead, as an
  agent started by \`baton up\` does; BATON_URL wins over BATON_DB, --db over both. (--api, not
  --url: \`task add --url\` is a task's link.)
  A file path or sqlite:<path> uses SQLite (one host); postgres://user@host/db uses PostgreSQL
  (many hosts). The default is the project's ${DEFAULT_DB}: the nearest directory from here upward
  that has one, as git finds .git (not past a filesystem boundary or BATON_CEILING_DIRECTORIES);
  \`baton init\` and \`baton up\` create it in the current directory when there is none.`;

const EXAMPLE_HELP = `Example:
  S=$(baton session start)
  baton task add github:acme/api#1246 --title "Fix login"
  baton claim github:acme/api#1246 --session "$S"      # exit 3 if someone else has it
  baton release github:acme/api#1246 --session "$S" --epoch 1 --outcome done`;

/**
 * The tree for one call, from the bundle's table `commands` (command-table.ts, or the agent's).
 * Only the module of the command `argv` names is imported and registered, so a call compiles and
 * runs one command's code, not all of them (docs/decisions/0007); help, an unknown command and
 * anything before the command that is not a global option register the whole table, so commander
 * answers those exactly as with the whole tree (the launcher sends those calls to the whole CLI).
 */
export async function buildProgram(argv: readonly string[], commands: CommandTable): Promise<Command> {
  const program = new Command('baton')
    .description('Many AI coding agents and humans, one backlog, no double work.')
    .option(
      '--json',
      'print results (and errors) as JSON on stdout (up: its log as JSON Lines); serve, mcp and hook refuse it',
    )
    .option(
      '--db <url>',
      `SQLite path or postgres:// URL (default $BATON_DB, else the project's ${DEFAULT_DB})`,
    )
    .option('--api <url>', "Baton's HTTP API instead of the database (default $BATON_URL)")
    .option('--token <token>', 'the API token to present with --api (default $BATON_TOKEN)')
    // Commander writes to stderr only to complain; run-cli.ts says it in one line instead.
    .configureOutput({ outputError: () => undefined, writeErr: () => undefined })
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .addHelpText('after', `\n${DATABASE_HELP}\n\n${exitCodeHelp()}\n\n${EXAMPLE_HELP}`);
  const wanted = commandNamed(argv.slice(2));
  // Read only where it can be asked for (`baton --version`, `baton --help`): no command named.
  if (wanted === null) {
    const version = batonVersion();
    const shown = argv.includes('--json') ? JSON.stringify({ version }) : version;
    program.version(shown, '-V, --version', 'print baton\'s version (with --json: {"version"})');
  }
  const chosen = commands.filter(([names]) => wanted !== null && names.includes(wanted));
  const registers = await Promise.all((chosen.length > 0 ? chosen : commands).map(([, load]) => load()));
  for (const register of registers) register(program);
  throwOnExit(program, 'baton');
  program.hook('preAction', (_root, action) => refuseBothWays(action, argv));
  return program;
}

/**
 * A switch given both ways (`--workspace w1 --no-workspace`, `--http … --no-http`): commander
 * keeps the last, so one of the two the user typed would be silently dropped.
 */
function refuseBothWays(action: Command, argv: readonly string[]): void {
  const end = argv.indexOf('--');
  const given = new Set((end === -1 ? argv : argv.slice(0, end)).map((word) => word.split('=')[0]));
  for (const negative of action.options.filter((option) => option.negate)) {
    const positive = action.options.find(
      (option) => !option.negate && option.attributeName() === negative.attributeName(),
    );
    if (positive?.long === undefined || negative.long === undefined) continue;
    if (given.has(positive.long) && given.has(negative.long))
      throw new InvalidInputError(
        `${positive.long} and ${negative.long} were both given`,
        `keep the one you mean; see \`${pathOf(action)} --help\``,
      );
  }
}

function pathOf(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at !== null; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/** Commander's exit, thrown instead, naming the command whose help to read. */
export class CommanderExit extends Error {
  override readonly name = 'CommanderExit';
  constructor(
    readonly original: CommanderError,
    readonly commandPath: string,
  ) {
    super(original.message.replace(/^error:\s*/, ''));
  }
}

function throwOnExit(command: Command, path: string): void {
  command.exitOverride((error) => {
    throw new CommanderExit(error, path);
  });
  for (const sub of command.commands) throwOnExit(sub, `${path} ${sub.name()}`);
}
