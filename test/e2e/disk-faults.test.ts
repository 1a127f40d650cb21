/**
 * Issue 14, item 12: a full disk and a damaged file have their own names, whether met when the
 * database is opened or when it is used, not "unreachable … check the path" nor an unexpected
 * error. A real full file system (a small tmpfs, mounted where the test may: as root) and a real
 * database whose pages are overwritten, before it is opened and while a process holds it open.
 * PostgreSQL's full disk: pg-disk-full.test.ts.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { baton } from '../support/cli.js';
import { InvalidInputError, isCorrupt } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import { fill, oneLine, smallDisk as mountSmallDisk } from '../support/full-disk.js';

/** A 1 MB tmpfs, or null where this process may not mount one. */
const smallDisk = (): string | null => mountSmallDisk('baton-full-', 'size=1m');

const disk = smallDisk();
after(() => {
  if (disk === null) return;
  execFileSync('umount', [disk]);
  rmSync(disk, { recursive: true, force: true });
});

describe('a full disk and a damaged file, by name', () => {
  test(
    'a full disk under a database in use exits 5 naming it, and changes nothing',
    { skip: disk === null && 'cannot mount a tmpfs here (needs root)' },
    async () => {
      const db = join(disk ?? '', 'used.db');
      assert.equal((await baton(db, 'init')).code, 0);
      fill(disk ?? '');
      oneLine(
        await baton(db, 'task', 'add', 'gh:acme/api#1'),
        5,
        /the disk is full .*free space on the device/,
      );
      rmSync(join(disk ?? '', 'filler'));
      assert.match((await baton(db, 'task', 'list')).stdout, /no tasks/);
    },
  );

  test(
    'a full disk met when the database is opened exits 5 naming it',
    { skip: disk === null && 'cannot mount a tmpfs here (needs root)' },
    async () => {
      fill(disk ?? '');
      const r = await baton(join(disk ?? '', 'new.db'), 'init');
      oneLine(r, 5, /cannot open SQLite database .*: the disk is full .*free space on the device/);
      rmSync(join(disk ?? '', 'filler'));
    },
  );

  test('a real database whose pages were overwritten is named corrupt when read, exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-damaged-'));
    const db = join(dir, 'baton.db');
    assert.equal((await baton(db, 'init')).code, 0);
    for (let i = 0; i < 40; i++) assert.equal((await baton(db, 'task', 'add', `gh:acme/api#${i}`)).code, 0);
    // Everything past the first page (the header SQLite checks at open) becomes noise.
    const fd = openSync(db, 'r+');
    const noise = Buffer.alloc(statSync(db).size - 4096, 0xa5);
    writeSync(fd, noise, 0, noise.length, 4096);
    closeSync(fd);
    writeFileSync(`${db}-wal`, '');
    oneLine(
      await baton(db, 'task', 'list'),
      2,
      /not a Baton database, or it is corrupt .*restore it from a backup/,
    );
    rmSync(dir, { recursive: true, force: true });
  });

  test('a file damaged while a process holds it open is named with its path, by that process and the CLI, exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-damaged-'));
    const db = join(dir, 'baton.db');
    try {
      const writer = await openStore(db);
      for (let i = 0; i < 40; i++)
        await writer.tasks.add({ key: `gh:acme/api#${i}`, title: 'x'.repeat(200) });
      await writer.close();
      // Opened well, and its cache has never held the tasks table's pages.
      const holder = await openStore(db, { intent: 'use' });
      try {
        const look = new Database(db, { readonly: true });
        const { rootpage } = look
          .prepare("SELECT rootpage FROM sqlite_master WHERE name = 'tasks'")
          .get() as {
          rootpage: number;
        };
        const pageSize = look.pragma('page_size', { simple: true }) as number;
        look.close();
        const fd = openSync(db, 'r+');
        writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
        closeSync(fd);

        const error = await holder.tasks.list().then(
          () => assert.fail('the damaged table was read'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof InvalidInputError, String(error));
        assert.ok(isCorrupt(error), 'still known as a damaged file');
        assert.match(error.message, new RegExp(`the SQLite database ${db} is corrupt`));
        const named = /^baton: the SQLite database .*baton\.db is corrupt .*restore it from a backup/;
        oneLine(await baton(db, 'task', 'list'), 2, named);
        oneLine(await baton(db, 'task', 'add', 'gh:acme/api#99'), 2, named);
      } finally {
        await holder.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
