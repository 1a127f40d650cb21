/**
 * `baton mcp`: Baton as an MCP server over stdio, built with the official SDK. It serves the tools
 * of tools.ts under one Baton session (session.ts), heartbeats that session while its client is
 * connected, and when stdin closes (the client went away) or a signal asks it to stop, it ends the
 * session it started, releasing whatever that session still holds, and exits.
 */
import { hostname } from 'node:os';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { every, type Clock } from '../../core/time.js';
import { validateEpoch, validateId, validateKey } from '../../core/validate.js';
import type { AgentClient, ClaimRef } from '../client.js';
import { McpSession } from './session.js';
import { registerTools } from './tools.js';

export const MCP_INSTRUCTIONS =
  'Baton coordinates the agents and people working one backlog so that no task is worked twice. ' +
  'Take work with baton_next, or claim a task you were given with baton_claim, and keep the epoch it ' +
  'returns. Call baton_heartbeat before each change; record pull requests and pushes with baton_effect; ' +
  'release the task with baton_release when you stop, or hand it to a human with baton_escalate when ' +
  'you cannot go on without one. Whenever a tool answers ok:false, stop working ' +
  'on that task: its message names who holds it now and says what to do.';

export interface McpServerOptions {
  readonly client: AgentClient;
  readonly env: NodeJS.ProcessEnv;
  readonly version: string;
  readonly heartbeatIntervalMs: number;
  /** The session's heartbeats run on it (daemon/clock.ts's systemClock outside tests). */
  readonly clock: Clock;
}

/** BATON_SESSION and BATON_KEY + BATON_EPOCH, as a runner sets them for its agents. */
export function givenByEnvironment(env: NodeJS.ProcessEnv): {
  session: number | null;
  claim: ClaimRef | null;
} {
  const session = env['BATON_SESSION'] ? validateId('session', env['BATON_SESSION']) : null;
  const [key, epoch] = [env['BATON_KEY'], env['BATON_EPOCH']];
  const claim =
    session !== null && key && epoch ? { key: validateKey(key), epoch: validateEpoch(epoch) } : null;
  return { session, claim };
}

/** Serves MCP on stdin/stdout until the client goes away; resolves once the session is ended. */
export async function runMcpServer(options: McpServerOptions): Promise<void> {
  const given = givenByEnvironment(options.env);
  const session = new McpSession({
    client: options.client,
    given: given.session,
    givenClaim: given.claim,
    name: 'baton mcp',
    host: hostname(),
    pid: process.pid,
  });
  const server = new McpServer(
    { name: 'baton', version: options.version },
    { instructions: MCP_INSTRUCTIONS },
  );
  registerTools(server, { client: options.client, session });
  const transport = new StdioServerTransport();
  const gone = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    transport.onclose = () => resolve();
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => resolve());
  });
  await server.connect(transport);
  const beat = new AbortController();
  const beating = every(options.clock, options.heartbeatIntervalMs, () => void session.beat(), beat.signal);
  try {
    await gone;
  } finally {
    beat.abort();
    await beating;
    await session.end().catch(() => undefined);
    await server.close().catch(() => undefined);
  }
}
