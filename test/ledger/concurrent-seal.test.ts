/**
 * Sealing while writers commit at full speed, on both engines: eight workers loop over the queue
 * (on PostgreSQL their calls go through the batch statement, whose ledger rows commit out of id
 * order) while a sealer seals again and again; the ledger must verify at the end, every row sealed
 * exactly once. This is the in-flight rule under real concurrency.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { sealLedger } from '../../src/coordinator/ledger/seal.js';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { ledgerFixture } from './ledger-fixture.js';

const JOBS = 300;
const WORKERS = 8;
/** Stores (connection pools): on PostgreSQL each runs its own batches, so commits interleave. */
const STORES = 3;

for (const engine of bothEngines()) {
  void describe(`concurrent sealing on ${engine.name}`, () => {
    test('seals while eight workers drain the queue, and the ledger verifies with every row sealed once', async () => {
      const f = await ledgerFixture(engine);
      try {
        const { store } = f;
        const extra = await Promise.all(Array.from({ length: STORES - 1 }, () => openStore(f.url)));
        const stores = [store, ...extra];
        for (let i = 0; i < JOBS; i++) await store.jobs.enqueue({ key: `job-${i}` });
        let draining = true;
        const sealer = (async () => {
          let rounds = 0;
          while (draining || rounds === 0) {
            await sealLedger(store, f.signer, { settleTimeoutMs: 5_000 });
            rounds++;
            // Let the event loop turn: SQLite's workers commit together once per turn (tick-batcher.ts).
            await sleep(1);
          }
          return rounds;
        })();
        const worker = async (i: number): Promise<void> => {
          const mine = stores[i % STORES] ?? store;
          const s = await mine.sessions.start({ kind: 'agent', host: 'box', pid: 1 });
          let job = await mine.jobs.claimNext({ session: s.id, start: true });
          while (job !== null) {
            const r = await mine.jobs.finishAndClaimNext({
              id: job.id,
              session: s.id,
              epoch: job.epoch,
              status: 'done',
              start: true,
            });
            job = r.next;
          }
        };
        await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
        await Promise.all(extra.map((s) => s.close()));
        draining = false;
        assert.ok((await sealer) >= 1);
        await sealLedger(store, f.signer);
        const report = await f.baton.ledger.verify();
        assert.equal(report.firstBad, null, JSON.stringify(report.problems.slice(0, 3)));
        assert.equal(report.unsealed.count, 0);
        const checkpoints = await store.ledger.checkpoints({ afterSeq: 0, limit: 1000 });
        assert.equal(
          checkpoints.reduce((n, c) => n + c.rowCount, 0),
          report.rows,
        );
      } finally {
        await f.close();
      }
    });
  });
}
