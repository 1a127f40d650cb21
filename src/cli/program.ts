/**
 * The command tree. Commander's own exits are turned into exceptions (exitOverride) and its error
 * text is silenced, so main.ts prints every error the same way and usage errors exit 2.
 */
import { Command, type CommanderError } from 'commander';
import { DEFAULT_DB } from '../store/open.js';
import { registerAudit } from './commands/audit.js';
import { registerClaim } from './commands/claim.js';
import { registerDb } from './commands/db.js';
import { registerEffect } from './commands/effect.js';
import { registerForceRelease } from './commands/force-release.js';
import { registerGuard } from './commands/guard.js';
import { registerHeartbeat } from './commands/heartbeat.js';
import { registerGithub } from './commands/github.js';
import { registerHooks } from './commands/hooks.js';
import { registerHosts } from './commands/hosts.js';
import { registerLeader } from './commands/leader.js';
import { registerMcp } from './commands/mcp.js';
import { registerLifecycle } from './commands/lifecycle.js';
import { registerNext } from './commands/next.js';
import { registerLedger } from './commands/ledger.js';
import { registerPlan } from './commands/plan.js';
import { registerQueue } from './commands/queue.js';
import { registerReport } from './commands/report.js';
import { registerSession } from './commands/session.js';
import { registerTask } from './commands/task.js';
import { registerUp } from './commands/up.js';
import { registerToken } from './commands/token.js';
import { registerServe } from './commands/serve.js';
import { registerWorkspace } from './commands/workspace.js';
import { exitCodeHelp } from './exit-codes.js';

const DATABASE_HELP = `Database:
  --db <url> or the environment variable BATON_DB names the database; --db wins.
  --api and --token (or BATON_URL and BATON_TOKEN) reach Baton over its HTTP API instead, as an
  agent started by \`baton up\` does; BATON_URL wins over BATON_DB, --db over both. (--api, not
  --url: \`task add --url\` is a task's link.)
  A file path or sqlite:<path> uses SQLite (one host); postgres://user@host/db uses PostgreSQL
  (many hosts). The default is ${DEFAULT_DB} under the current directory.`;

const EXAMPLE_HELP = `Example:
  S=$(baton session start)
  baton task add github:acme/api#1246 --title "Fix login"
  baton claim github:acme/api#1246 --session "$S"      # exit 3 if someone else has it
  baton release github:acme/api#1246 --session "$S" --epoch 1 --outcome done`;

export function buildProgram(): Command {
  const program = new Command('baton')
    .description('Many AI coding agents and humans, one backlog, no double work.')
    .option('--json', 'print results (and errors) as JSON on stdout')
    .option('--db <url>', `SQLite path or postgres:// URL (default $BATON_DB, else ${DEFAULT_DB})`)
    .option('--api <url>', "Baton's HTTP API instead of the database (default $BATON_URL)")
    .option('--token <token>', 'the API token to present with --api (default $BATON_TOKEN)')
    // Commander writes to stderr only to complain; main.ts says it in one line instead.
    .configureOutput({ outputError: () => undefined, writeErr: () => undefined })
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .addHelpText('after', `\n${DATABASE_HELP}\n\n${exitCodeHelp()}\n\n${EXAMPLE_HELP}`);
  registerTask(program);
  registerSession(program);
  registerHeartbeat(program);
  registerClaim(program);
  registerForceRelease(program);
  registerNext(program);
  registerLifecycle(program);
  registerEffect(program);
  registerQueue(program);
  registerAudit(program);
  registerLeader(program);
  registerUp(program);
  registerServe(program);
  registerToken(program);
  registerHosts(program);
  registerWorkspace(program);
  registerPlan(program);
  registerGuard(program);
  registerMcp(program);
  registerHooks(program);
  registerDb(program);
  registerLedger(program);
  registerReport(program);
  registerGithub(program);
  throwOnExit(program, 'baton');
  return program;
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
