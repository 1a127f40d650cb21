/**
 * A `baton` process on SQLite ends without closing its database (exit-open.ts): its WAL stays for
 * the next opener, and no write it acknowledged is lost to a later call, to a connection open all
 * along (as `baton up`'s is) or to a store opened afterwards. runCli in a test's own process
 * still closes every store it opens.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';
import { sqliteDatabase } from '../../test/support/databases.js';
import { openStore } from '../store/open.js';
import { COMMANDS } from './command-table.js';
import { runCli } from './run-cli.js';

const BIN = join(repoRoot(), 'bin', 'baton.js');

function claim(db: string, key: string, session: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const args = [BIN, 'claim', key, '--session', String(session), '--db', db];
    execFile(process.execPath, args, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`baton claim ${key}: ${stderr}`));
      else resolve(stdout);
    });
  });
}

/** A fresh database with tasks k0…k5 and one session. */
async function seeded(): Promise<{ db: string; session: number }> {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  try {
    for (let i = 0; i < 6; i++) await store.tasks.add({ key: `k${i}` });
    const started = await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
    return { db, session: started.id };
  } finally {
    await store.close();
  }
}

test('a CLI call leaves the WAL open for the next one, and every claim it printed stays', async () => {
  const { db, session } = await seeded();
  assert.equal(existsSync(`${db}-wal`), false, 'closing the seeding store removed its WAL');
  assert.match(await claim(db, 'k0', session), /^claimed k0 epoch 1 /);
  // The last connection was not closed, so it neither checkpointed nor deleted the WAL.
  assert.ok(statSync(`${db}-wal`).size > 0, 'the WAL holds the claim');
  assert.match(await claim(db, 'k1', session), /^claimed k1 epoch 1 /);

  // A connection open all along sees what later calls commit, as `baton up`'s does.
  const watcher = await openStore(db);
  try {
    for (const key of ['k2', 'k3']) assert.match(await claim(db, key, session), /epoch 1 /);
    for (const key of ['k0', 'k1', 'k2', 'k3']) {
      assert.equal((await watcher.claims.current(key))?.session, session, `the open store sees ${key}`);
    }
  } finally {
    await watcher.close();
  }
  assert.match(await claim(db, 'k4', session), /epoch 1 /);
  const after = await openStore(db);
  try {
    for (let i = 0; i <= 4; i++) {
      assert.equal((await after.claims.current(`k${i}`))?.epoch, 1, `a store opened afterwards sees k${i}`);
    }
  } finally {
    await after.close();
  }
});

test('runCli in a process that goes on closes its store, WAL and all', async () => {
  const { db, session } = await seeded();
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = () => true;
  let code: number;
  try {
    code = await runCli(['node', 'baton', 'claim', 'k5', '--session', String(session), '--db', db], COMMANDS);
  } finally {
    process.stdout.write = write;
  }
  assert.equal(code, 0);
  assert.equal(existsSync(`${db}-wal`), false, 'the store was closed: its WAL was checkpointed and removed');
});
