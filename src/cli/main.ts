/**
 * The `baton` command, every command of it: the entry of the CLI's bundle (scripts/bundle-cli.mjs),
 * which bin/baton.js runs for any command that is not an agent's (agent-main.ts).
 */
import { COMMANDS } from './command-table.js';
import { runMain } from './run-cli.js';

export const main = (argv: readonly string[]): Promise<boolean> => runMain(argv, COMMANDS);
