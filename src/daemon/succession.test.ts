/** The new leader's words for its predecessor, found however far back its term began. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openStore } from '../store/open.js';
import { afterPredecessor } from './succession.js';

/** Appends ledger rows straight to the file: a lease row of term 1 for `holder`, then `filler` others. */
function append(path: string, holder: number, type: string | null, filler: number): void {
  const db = new Database(path);
  try {
    const row = db.prepare(
      `INSERT INTO audit_events (at, type, session_id, epoch, detail) VALUES (?, ?, ?, ?, ?)`,
    );
    db.transaction(() => {
      const lease = JSON.stringify({ name: 'dispatcher', holder: String(holder) });
      if (type !== null) row.run(Date.now(), type, holder, 1, lease);
      for (let n = 0; n < filler; n++) row.run(Date.now(), 'job:claimed', holder, 1, '{}');
    })();
  } finally {
    db.close();
  }
}

test("names the previous term's holder and how it ended, its rows over 100,000 ledger rows back", async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'baton-succession-')), 'baton.db');
  const setup = await openStore(path);
  const leader = await setup.sessions.start({ kind: 'daemon', host: 'a', pid: 1 });
  await setup.close();
  // More than two of the lookup's windows between the term's start and now.
  append(path, leader.id, 'lease:acquired', 120_000);
  const store = await openStore(path);
  try {
    const who = `, after session ${leader.id}, which`;
    assert.equal(
      await afterPredecessor(store, 2),
      `${who} did not step down: its lease expired unrenewed (died, hung or cut off)`,
    );
    append(path, leader.id, 'lease:resigned', 60_000);
    await store.sessions.end(leader.id);
    assert.equal(await afterPredecessor(store, 2), `${who} stepped down`);
    assert.equal(await afterPredecessor(store, 3), '', 'no row of term 2: nothing is said');
  } finally {
    await store.close();
  }
});
