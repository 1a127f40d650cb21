/**
 * One `baton` command run in a process of its own, for its peak memory: the command runs in
 * process (runCli, exactly what bin/baton.js runs), then the process reports its peak resident set
 * (getrusage's maxrss) as one JSON line on fd 3, so the command's own stdout stays the command's.
 *   ledger-child <baton args…>
 */
import { writeSync } from 'node:fs';
import { COMMANDS } from '../src/cli/command-table.js';
import { runCli } from '../src/cli/run-cli.js';

const args = process.argv.slice(2);
const started = performance.now();
const code = await runCli(['node', 'baton', ...args], COMMANDS);
const result = {
  code,
  maxRssMb: process.resourceUsage().maxRSS / 1024,
  seconds: (performance.now() - started) / 1000,
};
writeSync(3, `${JSON.stringify(result)}\n`);
process.exitCode = code;
