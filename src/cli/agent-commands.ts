/**
 * The commands an agent runs over and over, and the modules that register them: the whole tree of
 * the agent's bundle (agent-main.ts), and the entries of the full tree (command-table.ts) that
 * name them. A `baton claim` then loads a bundle without the daemon, the HTTP server, the GitHub
 * client and the operator's commands, and a code cache without their functions (docs/decisions/0052).
 */
import type { CommandTable } from './command-table.js';

export const AGENT_COMMANDS: CommandTable = [
  [['session'], async () => (await import('./commands/session.js')).registerSession],
  [['heartbeat'], async () => (await import('./commands/heartbeat.js')).registerHeartbeat],
  [['claim', 'release'], async () => (await import('./commands/claim.js')).registerClaim],
  [['next'], async () => (await import('./commands/next.js')).registerNext],
  [
    ['reopen', 'close', 'escalate', 'escalations', 'resolve', 'gate', 'approve', 'reject', 'setting'],
    async () => (await import('./commands/lifecycle.js')).registerLifecycle,
  ],
  [['effect', 'effects'], async () => (await import('./commands/effect.js')).registerEffect],
  [['enqueue', 'queue', 'job', 'cancel'], async () => (await import('./commands/queue.js')).registerQueue],
  [['guard'], async () => (await import('./commands/guard.js')).registerGuard],
  [['hooks', 'hook', 'hook-keeper'], async () => (await import('./commands/hooks.js')).registerHooks],
];
