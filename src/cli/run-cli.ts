/**
 * One call of the `baton` command over a command table: parses arguments, runs one command and
 * sets the exit code; see `baton --help` for the table. The bundles' entries (main.ts, the whole
 * tree; agent-main.ts, the agent's commands) differ only in the table they give.
 */
import { InvalidInputError } from '../core/errors.js';
import { EXIT_OK, EXIT_USAGE, Exit } from './exit-codes.js';
import type { CommandTable } from './command-table.js';
import { buildProgram, CommanderExit } from './program.js';
import { reportError } from './report-error.js';
import { namedAsTyped } from './typed-flags.js';
import { endProcessAfterCommand, exitWithoutCleanup } from './exit-open.js';
import { drained, exitCodeAfterOutput, watchStdio } from './stdio.js';

export async function runCli(argv: readonly string[], commands: CommandTable): Promise<number> {
  // Known before parsing, so that usage errors are printed in the asked-for form too.
  const json = argv.slice(2).includes('--json');
  try {
    await (await buildProgram(argv, commands)).parseAsync(argv);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderExit) return commanderExit(error, json);
    if (error instanceof Exit) return error.code;
    return reportError(namedAsTyped(error, argv.slice(2)), json);
  }
}

/** Help and --version exit 0; every other commander exit is bad usage. */
function commanderExit(exit: CommanderExit, json: boolean): number {
  if (exit.original.exitCode === 0) return EXIT_OK;
  // A command group, such as `baton task`, run without a subcommand.
  const message =
    exit.original.code === 'commander.help' ? `${exit.commandPath} needs a subcommand` : exit.message;
  reportError(new InvalidInputError(message, `see \`${exit.commandPath} --help\``), json);
  return EXIT_USAGE;
}

/**
 * The process entry (bin/baton.js, through a bundle's main): runs one command and sets the exit
 * code. True when the process must end by process.exit() (exit-open.ts), which src/cli/launch.ts
 * does after its code cache: then what the command wrote has left the process already.
 */
export async function runMain(argv: readonly string[], commands: CommandTable): Promise<boolean> {
  // `baton queue list | head -1`: a reader that stops early is not an error worth a stack trace.
  watchStdio();
  endProcessAfterCommand();
  process.exitCode = exitCodeAfterOutput(await runCli(argv, commands));
  if (!exitWithoutCleanup()) return false;
  await drained();
  return true;
}
