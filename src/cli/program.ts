/**
 * The command tree. Commander's own exits are turned into exceptions (exitOverride) and its error
 * text is silenced, so main.ts prints every error the same way and usage errors exit 2.
 */
import { Command, type CommanderError } from 'commander';
import { DEFAULT_DB } from '../store/open.js';
import { exitCodeHelp } from './exit-codes.js';
import { batonVersion } from './version.js';

const DATABASE_HELP = `Database:
  --db <url> or the environment variable BATON_DB names the database; --db wins.
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
 * The tree for one call. Only the module of the command `argv` names is imported and registered,
 * so a call compiles and runs one command's code, not all of them (docs/decisions/0007); help, an
 * unknown command and anything before the command that is not a global option register them all,
 * so commander answers those exactly as with the whole tree.
 */
export async function buildProgram(argv: readonly string[]): Promise<Command> {
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
    // Commander writes to stderr only to complain; main.ts says it in one line instead.
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
  const chosen = COMMANDS.filter(([names]) => wanted !== null && names.includes(wanted));
  const registers = await Promise.all((chosen.length > 0 ? chosen : COMMANDS).map(([, load]) => load()));
  for (const register of registers) register(program);
  throwOnExit(program, 'baton');
  return program;
}

type Register = (program: Command) => void;

/**
 * Every top-level command, in the order `baton --help` lists them, with the module that registers
 * it (and nothing else at the top level). program.test.ts checks this against the modules.
 */
export const COMMANDS: readonly (readonly [names: readonly string[], load: () => Promise<Register>])[] = [
  [['task'], async () => (await import('./commands/task.js')).registerTask],
  [['session'], async () => (await import('./commands/session.js')).registerSession],
  [['heartbeat'], async () => (await import('./commands/heartbeat.js')).registerHeartbeat],
  [['claim', 'release'], async () => (await import('./commands/claim.js')).registerClaim],
  [['force-release'], async () => (await import('./commands/force-release.js')).registerForceRelease],
  [['next'], async () => (await import('./commands/next.js')).registerNext],
  [
    ['reopen', 'close', 'escalate', 'escalations', 'resolve', 'gate', 'approve', 'reject', 'setting'],
    async () => (await import('./commands/lifecycle.js')).registerLifecycle,
  ],
  [['effect', 'effects'], async () => (await import('./commands/effect.js')).registerEffect],
  [['enqueue', 'queue', 'job', 'cancel'], async () => (await import('./commands/queue.js')).registerQueue],
  [['audit'], async () => (await import('./commands/audit.js')).registerAudit],
  [['leader'], async () => (await import('./commands/leader.js')).registerLeader],
  [['status'], async () => (await import('./commands/status.js')).registerStatus],
  [['doctor'], async () => (await import('./commands/doctor.js')).registerDoctor],
  [['up'], async () => (await import('./commands/up.js')).registerUp],
  [['serve'], async () => (await import('./commands/serve.js')).registerServe],
  [['token'], async () => (await import('./commands/token.js')).registerToken],
  [['hosts', 'host', 'retry'], async () => (await import('./commands/hosts.js')).registerHosts],
  [
    ['workspace', 'agent', 'project'],
    async () => (await import('./commands/workspace.js')).registerWorkspace,
  ],
  [['plan'], async () => (await import('./commands/plan.js')).registerPlan],
  [['guard'], async () => (await import('./commands/guard.js')).registerGuard],
  [['mcp'], async () => (await import('./commands/mcp.js')).registerMcp],
  [['hooks', 'hook', 'hook-keeper'], async () => (await import('./commands/hooks.js')).registerHooks],
  [['init', 'db'], async () => (await import('./commands/db.js')).registerDb],
  [['ledger'], async () => (await import('./commands/ledger.js')).registerLedger],
  [['report'], async () => (await import('./commands/report.js')).registerReport],
  [['github'], async () => (await import('./commands/github.js')).registerGithub],
];

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
