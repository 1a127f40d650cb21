/**
 * The `baton` command with an agent's commands only (agent-commands.ts): the entry of the agent's
 * bundle (scripts/bundle-cli.mjs), which bin/baton.js runs when a call names one of them, so that
 * a claim, a heartbeat or a hook loads none of the rest (docs/decisions/0052).
 */
import { AGENT_COMMANDS } from './agent-commands.js';
import { runMain } from './run-cli.js';

export const main = (argv: readonly string[]): Promise<boolean> => runMain(argv, AGENT_COMMANDS);
