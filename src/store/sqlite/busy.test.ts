/**
 * Issue 14, item 8: a lock another program holds on the SQLite file is waited out asynchronously.
 * Before, each call retried on the event loop (200 attempts of the busy timeout), so nothing else
 * in the process ran, not even the timer that would end the lock here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createKeyFile } from '../../coordinator/ledger/keys.js';
import { sealLedger } from '../../coordinator/ledger/seal.js';
import { openSqliteStore } from './sqlite-store.js';

test('calls wait out another connection’s exclusive lock while the event loop keeps running', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'baton-busy-')), 'baton.db');
  const store = openSqliteStore({ path, busyTimeoutMs: 25 });
  const other = new Database(path);
  try {
    other.exec('BEGIN EXCLUSIVE');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    let ticksWhileLocked = -1;
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        ticksWhileLocked = ticks;
        other.exec('COMMIT');
        resolve();
      }, 1000),
    );
    // Writes (an enqueue, a heartbeat through the group commit) and a read, all while locked.
    const session = store.sessions.start({ kind: 'daemon', host: 'h', pid: process.pid, name: 'up' });
    const enqueued = store.jobs.enqueue({ key: 'k', command: 'true' });
    await released;
    clearInterval(timer);
    // The old code ran no tick at all while locked; a loaded machine runs far fewer than 100.
    assert.ok(ticksWhileLocked >= 5, `the loop ran while locked (${ticksWhileLocked} ticks of 10 ms in 1 s)`);
    const s = await session;
    assert.equal((await enqueued).job.key, 'k');
    assert.equal((await store.sessions.heartbeat({ session: s.id })).ok, true);
    assert.equal((await store.jobs.list({ key: 'k' })).length, 1, 'enqueued once, not once per retry');
  } finally {
    other.close();
    await store.close();
  }
});

test('a heartbeat through the group commit waits out a lock without blocking the loop', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'baton-busy-')), 'baton.db');
  const store = openSqliteStore({ path, busyTimeoutMs: 25 });
  const other = new Database(path);
  try {
    const s = await store.sessions.start({ kind: 'daemon', host: 'h', pid: process.pid, name: 'up' });
    other.exec('BEGIN EXCLUSIVE');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const beat = store.sessions.heartbeat({ session: s.id });
    await new Promise((resolve) => setTimeout(resolve, 600));
    const ticksWhileLocked = ticks;
    other.exec('COMMIT');
    clearInterval(timer);
    assert.ok(ticksWhileLocked >= 3, `the loop ran while locked (${ticksWhileLocked} ticks)`);
    assert.equal((await beat).ok, true);
  } finally {
    other.close();
    await store.close();
  }
});

test('the sealer’s append waits out a lock without blocking the loop, asking for its turn meanwhile', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-busy-'));
  const path = join(dir, 'baton.db');
  const store = openSqliteStore({ path, busyTimeoutMs: 25 });
  const signer = createKeyFile(join(dir, 'ledger.key'));
  await store.ledger.addKey({ id: signer.keyId, publicKey: signer.publicKey });
  const other = new Database(path);
  try {
    other.exec('BEGIN EXCLUSIVE');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const sealed = sealLedger(store, signer);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const ticksWhileLocked = ticks;
    const asked = existsSync(`${path}-turn`);
    other.exec('COMMIT');
    clearInterval(timer);
    // The append tries every millisecond without SQLite's blocking wait: the loop runs nearly free.
    assert.ok(
      ticksWhileLocked >= 20,
      `the loop ran while locked (${ticksWhileLocked} ticks of 10 ms in 600)`,
    );
    assert.ok(asked, 'the append asked for its turn while it waited');
    assert.equal((await sealed).sealed.length, 1);
    assert.equal(existsSync(`${path}-turn`), false, 'the turn is given back once written');
  } finally {
    other.close();
    await store.close();
  }
});
