/**
 * A database with some ledger activity and a registered key, for the ledger's end-to-end tests,
 * and an attacker with direct access to it: one who disables the append-only triggers as anyone
 * holding the database's credentials (or its SQLite file) could.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { createKeyFile, type LedgerSigner } from '../../src/coordinator/ledger/keys.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import type { TestDatabase } from '../support/databases.js';
import { rawSql, type RawSql } from '../support/raw-sql.js';

export interface LedgerFixture {
  readonly url: string;
  readonly store: Store;
  readonly baton: Coordinator;
  readonly signer: LedgerSigner;
  readonly keyFile: string;
  readonly dir: string;
  readonly attacker: Attacker;
  close(): Promise<void>;
}

export interface Attacker {
  /** Turns off the append-only triggers of the ledger, its checkpoints and its keys. */
  unguard(): Promise<void>;
  exec(sql: string, params?: readonly unknown[]): Promise<readonly Record<string, unknown>[]>;
  /** `?` on SQLite, `$n` on PostgreSQL. */
  readonly p: (n: number) => string;
  /** Moves a row's timestamp by one millisecond. */
  shiftTime(id: number): Promise<void>;
}

function attackerOn(db: TestDatabase, raw: RawSql): Attacker {
  const sqlite = db.engine === 'sqlite';
  const p = (n: number): string => (sqlite ? '?' : `$${n}`);
  return {
    p,
    exec: (sql, params) => raw.exec(sql, params),
    unguard: async () => {
      if (sqlite) {
        for (const t of ['audit_events', 'audit_checkpoints', 'ledger_keys']) {
          await raw.exec(`DROP TRIGGER ${t}_no_update`);
          await raw.exec(`DROP TRIGGER ${t}_no_delete`);
        }
      } else {
        for (const t of ['audit_events', 'audit_checkpoints', 'ledger_keys']) {
          await raw.exec(`ALTER TABLE ${t} DISABLE TRIGGER USER`);
        }
      }
    },
    shiftTime: async (id) => {
      const shift = sqlite ? 'at + 1' : `at + interval '1 millisecond'`;
      await raw.exec(`UPDATE audit_events SET at = ${shift} WHERE id = ${p(1)}`, [id]);
    },
  };
}

/** Sessions, tasks, claims and jobs: a few dozen ledger rows. */
export async function someActivity(store: Store, tag = ''): Promise<void> {
  const a = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 101 });
  const b = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 202 });
  for (let i = 0; i < 4; i++) {
    const key = `task-${tag}${i}`;
    await store.tasks.add({ key, title: `work ${i}` });
    await store.claims.acquire({ key, session: a.id });
    await store.claims.release({
      key,
      session: a.id,
      epoch: 1,
      outcome: i % 2 === 0 ? 'failed' : 'released',
    });
    const { job } = await store.jobs.enqueue({ key });
    const claimed = await store.jobs.claimNext({ session: b.id, start: true });
    if (claimed !== null) {
      await store.jobs.finish({ id: job.id, session: b.id, epoch: claimed.epoch, status: 'done' });
    }
  }
}

export async function ledgerFixture(db: TestDatabase): Promise<LedgerFixture> {
  const url = await db.fresh();
  const store = await openStore(url);
  const dir = mkdtempSync(join(tmpdir(), 'baton-ledger-'));
  const keyFile = join(dir, 'ledger.key');
  const signer = createKeyFile(keyFile);
  const baton = new Coordinator(store);
  await baton.ledger.addKey(signer);
  const raw = await rawSql(db, url);
  return {
    url,
    store,
    baton,
    signer,
    keyFile,
    dir,
    attacker: attackerOn(db, raw),
    close: async () => {
      await raw.close();
      await store.close();
    },
  };
}

/** Runs `body` on a fresh ledger fixture of this engine, closed afterwards whatever happens. */
export async function withLedger(db: TestDatabase, body: (f: LedgerFixture) => Promise<void>): Promise<void> {
  const f = await ledgerFixture(db);
  try {
    await body(f);
  } finally {
    await f.close();
  }
}
