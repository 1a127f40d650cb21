/**
 * A real `baton up` on a real PostgreSQL reached through a TCP relay a test closes, so that its
 * connections are refused as by a stopped server, and opens again on the same port: the database
 * lost and found again without stopping the shared server (pg-down-log.test.ts, drain-db-lost.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { repoRoot } from './cli.js';
import { postgresServers, postgresDatabase } from './databases.js';

/** A relay from a local port to PostgreSQL that can refuse every connection (down) and take them again (up). */
export class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly host: string,
    private readonly target: number,
  ) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target, this.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export const server = postgresServers()[0];

/**
 * A `baton up` (with `flags`, in `cwd`: its `.baton/` there) on a fresh database reached through a
 * Relay, its output collected; `direct` is that database's own URL, for a test's store.
 */
export async function upBehindRelay(flags: readonly string[], cwd?: string) {
  assert.ok(server !== undefined);
  const direct = new URL(await postgresDatabase(server).fresh());
  const relay = new Relay(direct.hostname, Number(direct.port || 5432));
  await relay.up();
  const viaRelay = new URL(direct);
  viaRelay.hostname = '127.0.0.1';
  viaRelay.port = String(relay.port);
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: viaRelay.toString() };
  for (const name of ['BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  const up = spawn(
    process.execPath,
    [join(repoRoot(), 'bin', 'baton.js'), 'up', '--host', 'box-1', ...flags],
    { env, cwd },
  );
  // Listened for from the start: a baton up that exited early has sent its 'close' already, and
  // the test's failure, not a promise left pending, is then what it reports.
  const closed = new Promise<number | null>((resolve) => up.on('close', (code) => resolve(code)));
  let out = '';
  up.stdout.on('data', (data: Buffer) => (out += data.toString()));
  up.stderr.on('data', (data: Buffer) => (out += data.toString()));
  return {
    relay,
    direct: direct.toString(),
    signal: (signal: NodeJS.Signals): boolean => up.kill(signal),
    /** Its exit code, once it has exited. */
    exited: (): Promise<number | null> => closed,
    out: (): string => out,
    lines: (pattern: RegExp): string[] => out.split('\n').filter((line) => pattern.test(line)),
    stop: async (): Promise<void> => {
      up.kill('SIGTERM');
      await closed;
      await relay.down();
    },
  };
}
