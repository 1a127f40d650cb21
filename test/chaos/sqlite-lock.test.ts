import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { holdsSqliteWriteLock, isStopped } from './sqlite-lock.js';

const driver = createRequire(import.meta.url).resolve('better-sqlite3');

/** A process on `file` that prints `ready` once it has done `sql`, then waits to be killed. */
async function holder(file: string, sql: string): Promise<{ pid: number; kill: () => void }> {
  const script = `
    const db = new (require(${JSON.stringify(driver)}))(${JSON.stringify(file)});
    db.pragma('journal_mode = WAL');
    db.exec(${JSON.stringify(sql)});
    process.stdout.write('ready\\n');
    setInterval(() => undefined, 1000);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(child.stdout, 'data');
  return { pid: child.pid ?? 0, kill: () => child.kill('SIGKILL') };
}

test('a process inside BEGIN IMMEDIATE holds the write lock; one that only read, or committed, does not', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'baton-lock-')), 'db.sqlite');
  const reader = await holder(file, 'CREATE TABLE IF NOT EXISTS t (x); SELECT * FROM t;');
  const committed = await holder(file, 'BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT;');
  const writer = await holder(file, 'BEGIN IMMEDIATE; INSERT INTO t VALUES (2);');
  try {
    assert.equal(holdsSqliteWriteLock(file, writer.pid), true);
    assert.equal(holdsSqliteWriteLock(file, reader.pid), false);
    assert.equal(holdsSqliteWriteLock(file, committed.pid), false);
    assert.equal(holdsSqliteWriteLock(join(tmpdir(), 'no-such.db'), writer.pid), false);
    process.kill(writer.pid, 'SIGSTOP');
    for (let tries = 0; !isStopped(writer.pid) && tries < 100; tries++)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(isStopped(writer.pid), true);
    assert.equal(isStopped(reader.pid), false);
    assert.equal(holdsSqliteWriteLock(file, writer.pid), true, 'stopped, it keeps the lock');
  } finally {
    for (const p of [reader, committed, writer]) p.kill();
  }
});
