/**
 * Issue 14, item 12, on PostgreSQL: a full disk under the database is named as such (exit 5,
 * "the disk is full … free space on the device"), as on SQLite (disk-faults.test.ts), not an
 * unexpected error. A real full disk: a tablespace on a small tmpfs, Baton's tables and indexes
 * moved into it, the tmpfs filled to the last byte, then a CLI write. It needs what a throwaway or
 * local server gives: a superuser, and the server on this machine, so that a directory mounted
 * here is the server's; elsewhere it is skipped, saying why.
 *
 * Only Baton's relations (and information_schema's four static tables) live on the small disk;
 * the database's catalogs stay on the server's own.
 * With the whole database in the tablespace (as this test first made it), the server itself can
 * free space there after the fill: a commit that invalidates a catalog's cache entry (autovacuum
 * analyzing a catalog, say) unlinks the database's relation-cache init file, about 160 KB. Landing
 * between a CLI's connection and its write, that lets the write fit: the likely cause of the
 * exit 0 CI saw several times and this machine never did. Nothing on the small disk is
 * PostgreSQL's to unlink now, and a wrong exit code reports the disk's free space and largest files.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { baton } from '../support/cli.js';
import { postgresServers } from '../support/databases.js';
import { describeDisk, fill, oneLine, smallDisk } from '../support/full-disk.js';

const suffix = `${process.pid}_${Date.now().toString(36)}`;
const SPACE = `baton_full_${suffix}`;
const DATABASE = `baton_full_${suffix}`;

interface Disk {
  readonly dir: string;
  readonly admin: pg.Client;
  readonly url: string;
}

let disk: Disk | null = null;
let why = '';

/** The server's superuser connection, or null when this process may not do what the test needs. */
async function setUp(): Promise<Disk | null> {
  const server = postgresServers()[0];
  if (server === undefined) return ((why = 'no PostgreSQL server'), null);
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const owner = await serverOwner(admin);
  if (owner === null) {
    await admin.end();
    return (
      (why = 'the PostgreSQL server is not on this machine, or this role may not read its data directory'),
      null
    );
  }
  const dir = smallDisk('baton-pgfull-', `size=24m,mode=0700,uid=${owner.uid},gid=${owner.gid}`);
  if (dir === null) {
    await admin.end();
    return ((why = 'cannot mount a tmpfs here (needs root)'), null);
  }
  const location = join(dir, 'space');
  mkdirSync(location, { mode: 0o700 });
  chownSync(location, owner.uid, owner.gid);
  await admin.query(`CREATE TABLESPACE ${SPACE} LOCATION '${location}'`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  const url = new URL(server.url);
  url.pathname = `/${DATABASE}`;
  return { dir, admin, url: url.toString() };
}

/** Who owns the server's data directory (the server's own user), or null when it is not here. */
async function serverOwner(admin: pg.Client): Promise<{ uid: number; gid: number } | null> {
  try {
    const { rows } = await admin.query<{ d: string }>('SELECT current_setting($1) AS d', ['data_directory']);
    const st = statSync(rows[0]?.d ?? '');
    return { uid: st.uid, gid: st.gid };
  } catch {
    return null;
  }
}

before(async () => {
  disk = await setUp();
});

after(async () => {
  if (disk === null) return;
  const { admin, dir } = disk;
  rmSync(join(dir, 'filler'), { force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await admin.query(`DROP TABLESPACE IF EXISTS ${SPACE}`);
  await admin.end();
  execFileSync('umount', [dir]);
  rmSync(dir, { recursive: true, force: true });
});

test('a full disk under a PostgreSQL database exits 5 naming it, and changes nothing', async (t) => {
  if (disk === null) return t.skip(why);
  const { dir, url } = disk;
  const init = await baton(url, 'init');
  assert.equal(init.code, 0, init.stderr);
  // Every table Baton made (their TOAST tables go with them) and every index; ALL IN TABLESPACE
  // skips pg_catalog's and moves only information_schema's four static tables beside them. The
  // sequences stay (a next id rewrites a page they have). The migrations leave dead rows: vacuumed
  // after the move, autovacuum has nothing left to truncate after the fill; the filler also tops
  // the disk up before each write.
  const database = new pg.Client({ connectionString: url });
  await database.connect();
  await database.query(`ALTER TABLE ALL IN TABLESPACE pg_default SET TABLESPACE ${SPACE}`);
  await database.query(`ALTER INDEX ALL IN TABLESPACE pg_default SET TABLESPACE ${SPACE}`);
  const { rows: left } = await database.query<{ relname: string }>(
    `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'm', 'i', 'I') AND c.reltablespace = 0`,
  );
  assert.deepEqual(left, [], "every table and index of Baton's is on the small disk");
  await database.query('VACUUM ANALYZE');
  await database.end();
  assert.match((await baton(url, 'task', 'list')).stdout, /no tasks/);
  fill(dir);
  // PostgreSQL fails a write on a full disk only where it must grow a file; a row that fits a page
  // it already has commits (its WAL is on another disk). A body of 60 KB of random hex (the limit
  // is 64 KiB) goes to the tasks table's TOAST table, empty until now, which must grow: this write
  // needs new space whatever pages exist.
  const body = randomBytes(30 * 1024).toString('hex');
  const added = await baton(url, 'task', 'add', 'gh:acme/api#1', '--body', body);
  oneLine(added, 5, /the disk is full .*free space on the device/, () => describeDisk(dir));
  fill(dir);
  const enqueued = await baton(url, 'enqueue', 'gh:acme/api#2');
  oneLine(enqueued, 5, /the disk is full .*free space on the device/, () => describeDisk(dir));
  rmSync(join(dir, 'filler'));
  assert.match((await baton(url, 'task', 'list')).stdout, /no tasks/);
  assert.equal((await baton(url, 'task', 'add', 'gh:acme/api#1')).code, 0, 'with space freed it works again');
});
