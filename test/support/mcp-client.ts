/** `baton mcp` under the MCP SDK's own Client over stdio, for the MCP tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import type { TestDatabase } from './databases.js';
import { repoRoot } from './cli.js';
import { waitUntil } from './wait.js';

export const BIN = `${repoRoot()}/bin/baton.js`;

export type Result = Awaited<ReturnType<Client['callTool']>>;
export type Structured = Record<string, unknown> & { ok?: boolean; message?: string };

export async function connect(db: string, env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--heartbeat-interval', '60'],
    env: { BATON_DB: db, ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'baton-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

export const structured = (r: Result): Structured => (r.structuredContent ?? {}) as Structured;
export const text = (r: Result): string =>
  (r.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n');

export async function withBaton(
  db: TestDatabase,
  body: (url: string, store: Store) => Promise<void>,
): Promise<void> {
  const url = await db.fresh();
  const store = await openStore(url);
  try {
    await body(url, store);
  } finally {
    await store.close();
  }
}

/** `baton serve` on a free port; its URL from the line it prints. */
export async function serve(db: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, '--db', db, 'serve', '--http', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  let url = '';
  await waitUntil(
    () => {
      url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '';
      return url !== '';
    },
    15_000,
    `baton serve to print its URL: ${out}`,
  );
  return { url, child };
}

/** `baton mcp` for session `session`, with BATON_URL, the token `secret` and BATON_SESSION. */
export async function mcpOver(
  url: string,
  secret: string,
  session: number,
  env: Record<string, string> = {},
): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--heartbeat-interval', '60'],
    env: {
      BATON_URL: url,
      BATON_TOKEN: secret,
      BATON_SESSION: String(session),
      PATH: process.env['PATH'] ?? '',
      ...env,
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'baton-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}
