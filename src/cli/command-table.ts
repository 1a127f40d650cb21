/**
 * Every top-level command, in the order `baton --help` lists them, with the module that registers
 * it (and nothing else at the top level). program.test.ts checks this against the modules. The
 * agent's commands are the entries of agent-commands.ts, which the agent's bundle holds alone.
 */
import type { Command } from 'commander';
import { AGENT_COMMANDS } from './agent-commands.js';

export type Register = (program: Command) => void;
export type CommandTable = readonly (readonly [names: readonly string[], load: () => Promise<Register>])[];

/** The agent's entry that registers `name`. */
function agent(name: string): CommandTable[number] {
  const entry = AGENT_COMMANDS.find(([names]) => names.includes(name));
  if (entry === undefined) throw new Error(`no agent command ${name}`);
  return entry;
}

export const COMMANDS: CommandTable = [
  [['task'], async () => (await import('./commands/task.js')).registerTask],
  agent('session'),
  agent('heartbeat'),
  agent('claim'),
  [['force-release'], async () => (await import('./commands/force-release.js')).registerForceRelease],
  agent('next'),
  agent('escalate'),
  agent('effect'),
  agent('job'),
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
  agent('guard'),
  [['mcp'], async () => (await import('./commands/mcp.js')).registerMcp],
  agent('hooks'),
  [['init', 'db'], async () => (await import('./commands/db.js')).registerDb],
  [['ledger'], async () => (await import('./commands/ledger.js')).registerLedger],
  [['report'], async () => (await import('./commands/report.js')).registerReport],
  [['github'], async () => (await import('./commands/github.js')).registerGithub],
];
