/**
 * Tampering with the ledger, on both engines, as someone with direct database access would: with
 * the append-only triggers disabled, each kind of change is made after the rows were sealed, and
 * `baton audit verify --json` must exit 1 naming the first bad row, what happened to it, and the
 * checkpoint that no longer matches.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anchorOf, appendAnchors, type Anchor } from '../../src/coordinator/ledger/anchor.js';
import { createKeyFile } from '../../src/coordinator/ledger/keys.js';
import { sealLedger } from '../../src/coordinator/ledger/seal.js';
import { bothEngines } from '../support/databases.js';
import { cliOn } from '../support/cli.js';
import { someActivity, withLedger, type LedgerFixture } from './ledger-fixture.js';

interface Verdict {
  readonly ok: boolean;
  readonly firstBad: {
    readonly id: number;
    readonly problem: string;
    readonly checkpoint: number | null;
  } | null;
  readonly unsealed: { readonly count: number };
}

/** Activity, sealed; the ids of the rows as written. */
async function sealed(f: LedgerFixture): Promise<number[]> {
  await someActivity(f.store);
  const { sealed: checkpoints } = await f.baton.ledger.seal(f.signer);
  assert.equal(checkpoints.length, 1);
  return (await f.store.audit.list()).map((e) => e.id);
}

async function verify(f: LedgerFixture, code: number, ...args: string[]): Promise<Verdict> {
  return cliOn(f.url).json<Verdict>(code, 'audit', 'verify', ...args);
}

for (const engine of bothEngines()) {
  void describe(`ledger tampering on ${engine.name}`, () => {
    test('an untouched ledger verifies, and rows written after the last seal are reported as unsealed', () =>
      withLedger(engine, async (f) => {
        await sealed(f);
        await f.store.tasks.add({ key: 'later' });
        const v = await verify(f, 0);
        assert.equal(v.ok, true);
        assert.equal(v.firstBad, null);
        assert.equal(v.unsealed.count, 1);
      }));

    test('detects an edited payload and names the row and the checkpoint', () =>
      withLedger(engine, async (f) => {
        const ids = await sealed(f);
        const target = ids[7] ?? 0;
        await f.attacker.unguard();
        await f.attacker.exec(
          `UPDATE audit_events SET detail = '{"outcome":"done"}' WHERE id = ${f.attacker.p(1)}`,
          [target],
        );
        const v = await verify(f, 1);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          target,
          'edited',
          1,
        ]);
      }));

    test('detects an edited timestamp', () =>
      withLedger(engine, async (f) => {
        const ids = await sealed(f);
        const target = ids[4] ?? 0;
        await f.attacker.unguard();
        await f.attacker.shiftTime(target);
        const v = await verify(f, 1);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          target,
          'edited',
          1,
        ]);
      }));

    test('detects a deleted row in the middle', () =>
      withLedger(engine, async (f) => {
        const ids = await sealed(f);
        const target = ids[10] ?? 0;
        await f.attacker.unguard();
        await f.attacker.exec(`DELETE FROM audit_events WHERE id = ${f.attacker.p(1)}`, [target]);
        const v = await verify(f, 1);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          target,
          'missing',
          1,
        ]);
      }));

    test('detects the newest row deleted after a checkpoint covered it', () =>
      withLedger(engine, async (f) => {
        const ids = await sealed(f);
        const newest = ids.at(-1) ?? 0;
        await f.attacker.unguard();
        await f.attacker.exec(`DELETE FROM audit_events WHERE id = ${f.attacker.p(1)}`, [newest]);
        const v = await verify(f, 1);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          newest,
          'missing',
          1,
        ]);
      }));

    test('an anchored checkpoint rolled back by a restore names its first row, when anchoring began later', () =>
      withLedger(engine, async (f) => {
        await sealed(f); // checkpoint 1, never anchored (the backup is taken here)
        const through = (await f.store.audit.list()).at(-1)?.id ?? 0;
        await someActivity(f.store, 'b');
        const anchors = join(f.dir, 'anchors.jsonl');
        await cliOn(f.url).json(0, 'audit', 'seal', '--key-file', f.keyFile, '--anchor', anchors);
        const [anchor] = readFileSync(anchors, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Anchor);
        assert.deepEqual([anchor?.seq, anchor?.firstId], [2, through + 1]);
        // The restore: the database as it was at checkpoint 1.
        await f.attacker.unguard();
        await f.attacker.exec('DELETE FROM audit_checkpoints WHERE seq = 2');
        await f.attacker.exec(`DELETE FROM audit_events WHERE id > ${f.attacker.p(1)}`, [through]);
        assert.equal((await verify(f, 0)).ok, true);
        const v = await verify(f, 1, '--anchor', anchors);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          through + 1,
          'missing',
          2,
        ]);
      }));

    test('detects a forged row inserted among the sealed ones', () =>
      withLedger(engine, async (f) => {
        // A gap, as a rolled-back transaction leaves one in a sequence; then the forger fills it.
        await someActivity(f.store);
        const gap = (await f.store.audit.list())[5]?.id ?? 0;
        await f.attacker.unguard();
        await f.attacker.exec(`DELETE FROM audit_events WHERE id = ${f.attacker.p(1)}`, [gap]);
        await f.baton.ledger.seal(f.signer);
        assert.equal((await verify(f, 0)).ok, true);
        const p = f.attacker.p;
        await f.attacker.exec(
          `INSERT INTO audit_events (id, at, type, task_key, detail) SELECT ${p(1)}, at, 'claim:granted', 'task-0', '{}'
           FROM audit_events WHERE id = ${p(2)}`,
          [gap, gap - 1],
        );
        const v = await verify(f, 1);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          gap,
          'inserted',
          1,
        ]);
      }));

    test('detects two rows whose ids were swapped', () =>
      withLedger(engine, async (f) => {
        const ids = await sealed(f);
        const [a, b] = [ids[3] ?? 0, ids[8] ?? 0];
        await f.attacker.unguard();
        const p = f.attacker.p;
        await f.attacker.exec(`UPDATE audit_events SET id = -1 WHERE id = ${p(1)}`, [a]);
        await f.attacker.exec(`UPDATE audit_events SET id = ${p(1)} WHERE id = ${p(2)}`, [a, b]);
        await f.attacker.exec(`UPDATE audit_events SET id = ${p(1)} WHERE id = -1`, [b]);
        const v = await verify(f, 1);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem, v.firstBad.checkpoint], [
          a,
          'reordered',
          1,
        ]);
      }));

    test('detects a consistent rewrite of the whole ledger, re-sealed with a new key, through its anchor', () =>
      withLedger(engine, async (f) => {
        const ids = await sealed(f);
        await someActivity(f.store, 'b');
        const { sealed: more } = await f.baton.ledger.seal(f.signer);
        const anchors = join(f.dir, 'anchors.jsonl');
        const checkpoints = await f.store.ledger.checkpoints({ afterSeq: 0, limit: 10 });
        appendAnchors(
          anchors,
          checkpoints.map((c) => anchorOf(c, f.signer.publicKey)),
        );
        assert.equal(more.length, 1);
        // The attacker edits a row, then rebuilds every checkpoint over the edited table.
        await f.attacker.unguard();
        const target = ids[6] ?? 0;
        await f.attacker.exec(
          `UPDATE audit_events SET detail = '{"outcome":"done"}' WHERE id = ${f.attacker.p(1)}`,
          [target],
        );
        await f.attacker.exec('DELETE FROM audit_checkpoints');
        const forger = createKeyFile(join(f.dir, 'forger.key'));
        await f.attacker.exec(
          `INSERT INTO ledger_keys (id, public_key, added_at)
           SELECT ${f.attacker.p(1)}, ${f.attacker.p(2)}, added_at FROM ledger_keys`,
          [forger.keyId, forger.publicKey],
        );
        await sealLedger(f.store, forger);
        assert.equal((await verify(f, 0)).ok, true, 'consistent within the database');
        const v = await verify(f, 1, '--anchor', anchors);
        assert.equal(v.firstBad?.problem, 'edited');
        assert.equal(v.firstBad?.checkpoint, 1);
        assert.ok((v.firstBad?.id ?? Infinity) <= target);
        const pinned = await verify(f, 1, '--public-key', `ed25519:${f.signer.publicKey}`);
        assert.equal(pinned.firstBad?.checkpoint, 1);
      }));
  });
}
