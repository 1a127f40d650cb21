/** `baton mcp` under the MCP SDK's own Client over stdio, for the MCP tests. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import type { TestDatabase } from './databases.js';
import { repoRoot } from './cli.js';

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
