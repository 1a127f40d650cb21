/**
 * Sealing never launders a rewrite. Whoever owns the database can delete the checkpoints, edit the
 * rows they covered, and wait: a sealer that signed what it then found would vouch for the edit
 * with the real key, and `baton audit verify` without an anchor would pass. `baton audit seal` and
 * `prune` with `--anchor FILE`, and `baton up`'s sealer (its anchor file, else what it sealed
 * itself), first check that the database still holds the newest checkpoint they know of.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createKeyFile, type LedgerSigner } from '../../src/coordinator/ledger/keys.js';
import { sealLedger, signCheckpoint } from '../../src/coordinator/ledger/seal.js';
import { systemClock } from '../../src/daemon/clock.js';
import { LedgerSealer } from '../../src/daemon/sealer.js';
import { SealedRecord } from '../../src/coordinator/ledger/sealed-record.js';
import type { CheckpointFields } from '../../src/core/ledger.js';
import { bothEngines } from '../support/databases.js';
import { cliOn } from '../support/cli.js';
import { someActivity, withLedger, type LedgerFixture } from './ledger-fixture.js';

/** The attacker's rewrite: an edited row, and every checkpoint deleted. */
async function rewrite(f: LedgerFixture): Promise<void> {
  await f.attacker.unguard();
  await f.attacker.exec(`UPDATE audit_events SET detail = '{"outcome":"done"}' WHERE id = 3`);
  await f.attacker.exec('DELETE FROM audit_checkpoints');
}

const checkpointCount = async (f: LedgerFixture): Promise<number> =>
  (await f.store.ledger.checkpoints({ afterSeq: 0, limit: 100 })).length;

function sealerOn(
  f: LedgerFixture,
  anchorFile: string | null,
  record: SealedRecord | null = null,
): LedgerSealer {
  const options = { store: f.store, signer: f.signer, leading: () => true, clock: systemClock };
  return new LedgerSealer({ ...options, intervalMs: 60_000, anchorFile, record });
}

/**
 * Checkpoints 1 and 2 sealed and anchored, then removed with their rows by a prune record whose
 * signature `forge` makes: a rewrite that hides rows behind what looks like retention.
 */
async function forgedPrune(f: LedgerFixture, anchors: string, forge: LedgerSigner): Promise<void> {
  const cli = cliOn(f.url);
  const key = ['--key-file', f.keyFile, '--anchor', anchors];
  await someActivity(f.store);
  await cli.json(0, 'audit', 'seal', ...key);
  await someActivity(f.store, 'b');
  await cli.json(0, 'audit', 'seal', ...key);
  const [first, second] = await f.store.ledger.checkpoints({ afterSeq: 0, limit: 2 });
  assert.ok(first !== undefined && second !== undefined);
  const fields: CheckpointFields = {
    seq: 3,
    kind: 'prune',
    firstId: 1,
    lastId: second.lastId,
    rowCount: first.rowCount + second.rowCount,
    root: second.hash,
    prevHash: second.hash,
    keyId: forge.keyId,
    sealedAt: await f.store.now(),
    throughSeq: 2,
  };
  assert.ok(await f.store.ledger.prune(signCheckpoint(fields, forge)), 'the store takes the record');
  await someActivity(f.store, 'c');
}

for (const engine of bothEngines()) {
  void describe(`sealing over a rewritten ledger on ${engine.name}`, () => {
    test('seal and prune with --anchor, and a sealer with an anchor file, refuse and sign nothing', () =>
      withLedger(engine, async (f) => {
        const cli = cliOn(f.url);
        const anchors = join(f.dir, 'anchors.jsonl');
        const key = ['--key-file', f.keyFile, '--anchor', anchors];
        await someActivity(f.store);
        await cli.json(0, 'audit', 'seal', ...key);
        await someActivity(f.store, 'b');
        await cli.json(0, 'audit', 'seal', ...key); // the file's newest line: checkpoint 2
        await rewrite(f);
        const missing =
          /^baton: the ledger was rewritten: checkpoint 2 \(anchored in \S+anchors\.jsonl\) is missing/;
        for (const args of [
          ['audit', 'seal', ...key],
          ['audit', 'prune', '--before', '2999-01-01', ...key],
        ]) {
          const refused = await cli.run(...args);
          assert.equal(refused.code, 3, `${args.join(' ')}: ${refused.stderr}`);
          assert.match(refused.stderr, missing);
          assert.match(
            refused.stderr,
            /nothing is signed over it — find out what happened with `baton audit verify/,
          );
          assert.equal(refused.stderr.trim().split('\n').length, 1);
        }
        // `baton up`'s sealer, started afresh on the same anchor file.
        await assert.rejects(sealerOn(f, anchors).sealNow(), /checkpoint 2 \(anchored in .+\) is missing/);
        assert.equal(await checkpointCount(f), 0, 'nothing signed');
        // A forger re-seals the edited table: checkpoint 2 is back, with another hash.
        const forger = createKeyFile(join(f.dir, 'forger.key'));
        await f.attacker.exec(
          `INSERT INTO ledger_keys (id, public_key, added_at)
           SELECT ${f.attacker.p(1)}, ${f.attacker.p(2)}, added_at FROM ledger_keys`,
          [forger.keyId, forger.publicKey],
        );
        await sealLedger(f.store, forger, { checkpointsMax: 1 });
        await someActivity(f.store, 'c');
        await sealLedger(f.store, forger, { checkpointsMax: 1 });
        const changed = await cli.run('audit', 'seal', ...key);
        assert.equal(changed.code, 3);
        assert.match(changed.stderr, /checkpoint 2 \(anchored in \S+\) has another hash in the database/);
        assert.equal(await checkpointCount(f), 2, 'only the forger’s');
      }));

    test('a prune record stands for a known checkpoint only when a key known outside the database signed it', async () => {
      const refusals: [string, (f: LedgerFixture) => Promise<LedgerSigner>, RegExp][] = [
        [
          'signed by a key the attacker registered',
          async (f) => {
            const forger = createKeyFile(join(f.dir, 'forger.key'));
            await f.attacker.exec(
              `INSERT INTO ledger_keys (id, public_key, added_at)
               SELECT ${f.attacker.p(1)}, ${f.attacker.p(2)}, added_at FROM ledger_keys`,
              [forger.keyId, forger.publicKey],
            );
            return forger;
          },
          /prune record 3, signed by key [0-9a-f]{16}, which is neither this signer's nor the known checkpoint's/,
        ],
        [
          'naming the real key, with a signature it did not make',
          (f) => {
            const forger = createKeyFile(join(f.dir, 'forger.key'));
            const { keyId, publicKey } = f.signer;
            return Promise.resolve({ keyId, publicKey, sign: (hash: string) => forger.sign(hash) });
          },
          /prune record 3, whose signature does not verify under key [0-9a-f]{16}/,
        ],
      ];
      for (const [what, forger, problem] of refusals) {
        await withLedger(engine, async (f) => {
          const anchors = join(f.dir, 'anchors.jsonl');
          const forge = await forger(f);
          await forgedPrune(f, anchors, forge);
          const seal = ['audit', 'seal', '--key-file', f.keyFile, '--anchor', anchors];
          const refused = await cliOn(f.url).run(...seal);
          assert.equal(refused.code, 3, `${what}: ${refused.stderr}`);
          assert.match(
            refused.stderr,
            /^baton: the ledger was rewritten: checkpoint 2 \(anchored in \S+\) was removed by/,
          );
          assert.match(refused.stderr, problem, what);
          await assert.rejects(sealerOn(f, anchors).sealNow(), problem, what);
          assert.equal(await checkpointCount(f), 1, `${what}: only the forged prune record`);
        });
      }
    });

    test('a sealer without an anchor file refuses once what it sealed itself is gone', () =>
      withLedger(engine, async (f) => {
        const sealer = sealerOn(f, null);
        await someActivity(f.store);
        assert.equal((await sealer.sealNow()).length, 1);
        await rewrite(f);
        await someActivity(f.store, 'b');
        await assert.rejects(sealer.sealNow(), /checkpoint 1 \(sealed by this process\) is missing/);
        assert.equal(await checkpointCount(f), 0);
      }));

    test('a round that reads its last checkpoint as the newest needs no read of its own; one replaced is refused', () =>
      withLedger(engine, async (f) => {
        const sealer = sealerOn(f, null);
        await someActivity(f.store);
        assert.equal((await sealer.sealNow()).length, 1);
        const checkpoints = f.store.ledger.checkpoints.bind(f.store.ledger);
        let reads = 0;
        Object.assign(f.store.ledger, {
          checkpoints: (params: Parameters<typeof checkpoints>[0]) => (reads++, checkpoints(params)),
        });
        await someActivity(f.store, 'b');
        assert.equal((await sealer.sealNow()).length, 1);
        assert.equal(reads, 0, 'the unsealed read’s newest checkpoint is the one this sealer signed');
        await f.attacker.unguard();
        await f.attacker.exec(`UPDATE audit_checkpoints SET hash = '${'0'.repeat(64)}' WHERE seq = 2`);
        await someActivity(f.store, 'c');
        await assert.rejects(sealer.sealNow(), /checkpoint 2 \(sealed by this process\) has another hash/);
        assert.equal(await checkpointCount(f), 2);
      }));

    test('without an anchor file, a restarted sealer and `audit seal` refuse once what the key sealed last is gone', () =>
      withLedger(engine, async (f) => {
        const record = SealedRecord.of(f.keyFile, f.url);
        await someActivity(f.store);
        assert.equal((await sealerOn(f, null, record).sealNow()).length, 1);
        await someActivity(f.store, 'b');
        const cli = cliOn(f.url);
        const sealed = await cli.json<{ checkpoints: number }>(0, 'audit', 'seal', '--key-file', f.keyFile);
        assert.equal(sealed.checkpoints, 1, 'checkpoint 2, recorded beside the key');
        assert.equal((statSync(record.path).mode & 0o777).toString(8), '600');
        assert.equal((statSync(dirname(record.path)).mode & 0o777).toString(8), '700');
        await rewrite(f);
        await someActivity(f.store, 'c');
        // `baton up` started again: a new sealer, which remembers nothing itself.
        const missing = /checkpoint 2 \(sealed last with this key, recorded in \S+\.json\) is missing/;
        await assert.rejects(sealerOn(f, null, record).sealNow(), missing);
        const refused = await cli.run('audit', 'seal', '--key-file', f.keyFile);
        assert.equal(refused.code, 3, refused.stderr);
        assert.match(refused.stderr, missing);
        assert.equal(refused.stderr.trim().split('\n').length, 1);
        assert.equal(await checkpointCount(f), 0, 'nothing signed over the rewrite');
        // The record is this database's: the same key seals another database from its start.
        await withLedger(engine, async (other) => {
          await someActivity(other.store);
          const elsewhere = SealedRecord.of(f.keyFile, other.url);
          assert.notEqual(elsewhere.path, record.path);
          const signer = { ...other, signer: f.signer };
          await other.baton.ledger.addKey(f.signer);
          assert.equal((await sealerOn(signer, null, elsewhere).sealNow()).length, 1);
        });
      }));

    test('a record that cannot be written: the seal stands, and says so in one line', () =>
      withLedger(engine, async (f) => {
        const record = SealedRecord.of(f.keyFile, f.url);
        mkdirSync(record.path, { recursive: true }); // a folder where the record goes
        await someActivity(f.store);
        const done = await cliOn(f.url).run('--json', 'audit', 'seal', '--key-file', f.keyFile);
        assert.equal(done.code, 0, done.stderr);
        assert.equal((JSON.parse(done.stdout) as { checkpoints: number }).checkpoints, 1);
        assert.match(
          done.stderr,
          /^baton: the ledger is sealed through checkpoint 1, but the record of it beside the key \(\S+\) could not be written: .+; a sealer started later trusts the database until it is\n$/,
        );
        await someActivity(f.store, 'b');
        await assert.rejects(sealerOn(f, null, record).sealNow(), /checkpoint 2, but the record of it/);
        assert.equal(await checkpointCount(f), 2, 'sealed all the same');
      }));

    test('a prune record stands for the checkpoints it removed: sealing goes on after a prune', () =>
      withLedger(engine, async (f) => {
        const cli = cliOn(f.url);
        const anchors = join(f.dir, 'anchors.jsonl');
        await someActivity(f.store);
        await cli.json(0, 'audit', 'seal', '--key-file', f.keyFile, '--anchor', anchors);
        // Pruned without --anchor: the file's newest line names checkpoint 1, now removed.
        const pruned = await cli.json<{ removed: number }>(
          0,
          ...['audit', 'prune', '--before', '2999-01-01', '--key-file', f.keyFile],
        );
        assert.ok(pruned.removed > 0);
        await someActivity(f.store, 'b');
        const sealed = await cli.json<{ checkpoints: number }>(
          0,
          ...['audit', 'seal', '--key-file', f.keyFile, '--anchor', anchors],
        );
        assert.equal(sealed.checkpoints, 1);
        assert.equal((await sealerOn(f, anchors).sealNow()).length, 0, 'nothing left, and no refusal');
      }));
  });
}
