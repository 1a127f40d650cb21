/**
 * The verifier against random ledgers: sealed into checkpoints and left alone, every one verifies;
 * with any single edit, deletion, insertion or swap of a sealed row, none does, and the first bad
 * row is the one changed. A seeded property test (fast-check): a failure prints its seed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyFile, ledgerCrypto, sha256Hex, type LedgerSigner } from '../coordinator/ledger/keys.js';
import { signCheckpoint } from '../coordinator/ledger/seal.js';
import { encodeLeaves, GENESIS_HASH, rowContent, type Checkpoint } from './ledger.js';
import { LedgerVerifier, type LedgerReport } from './ledger-verify.js';

type Row = Record<string, unknown>;

/** A key as `baton ledger init` makes it (not generateKeyPairSync, which can hang on Node 20: keys.ts). */
function signer(): LedgerSigner {
  return createKeyFile(join(mkdtempSync(join(tmpdir(), 'baton-ledger-verify-')), 'ledger.key'));
}

const key = signer();

/** Seals the rows into checkpoints of `size` rows, as the sealer would. */
function seal(rows: readonly Row[], size: number): { c: Checkpoint; leaves: Uint8Array }[] {
  const out: { c: Checkpoint; leaves: Uint8Array }[] = [];
  for (let i = 0; i < rows.length; i += size) {
    const part = rows.slice(i, i + size);
    const leaves = encodeLeaves(part.map((r) => ({ id: Number(r['id']), hash: sha256Hex(rowContent(r)) })));
    const prev = out.at(-1)?.c;
    const c = signCheckpoint(
      {
        seq: out.length + 1,
        kind: 'seal',
        firstId: (prev?.lastId ?? 0) + 1,
        lastId: Number(part.at(-1)?.['id']),
        rowCount: part.length,
        root: sha256Hex(leaves),
        prevHash: prev?.hash ?? GENESIS_HASH,
        keyId: key.keyId,
        sealedAt: 1_800_000_000_000 + i,
        throughSeq: null,
      },
      key,
    );
    out.push({ c, leaves });
  }
  return out;
}

function verify(seals: readonly { c: Checkpoint; leaves: Uint8Array }[], rows: readonly Row[]): LedgerReport {
  const v = new LedgerVerifier(ledgerCrypto([{ id: key.keyId, publicKey: key.publicKey }], null), {
    complete: true,
  });
  const sorted = [...rows].sort((a, b) => Number(a['id']) - Number(b['id']));
  let next = 0;
  // As ledgerEvents streams them: each checkpoint, then every row up to its last id; then the rest.
  for (const s of seals) {
    v.checkpoint(s.c, s.leaves);
    for (; next < sorted.length && Number(sorted[next]?.['id']) <= s.c.lastId; next++)
      v.row(sorted[next] ?? {});
  }
  for (; next < sorted.length; next++) v.row(sorted[next] ?? {});
  return v.finish();
}

const ledger = fc
  .array(
    fc.record({ type: fc.constantFrom('claim:granted', 'job:finished'), n: fc.integer({ min: 0, max: 9 }) }),
    {
      minLength: 2,
      maxLength: 40,
    },
  )
  .map((xs) =>
    xs.map((x, i): Row => ({ id: i + 1, at: 1_000 + i, type: x.type, detail: `{"n":${x.n}}`, host: null })),
  );

const change = fc.record({
  kind: fc.constantFrom('edit', 'delete', 'insert', 'swap'),
  at: fc.nat(),
  other: fc.nat(),
  size: fc.integer({ min: 1, max: 9 }),
});

test('a sealed ledger left alone always verifies', () => {
  fc.assert(
    fc.property(ledger, fc.integer({ min: 1, max: 9 }), (rows, size) => {
      assert.equal(verify(seal(rows, size), rows).ok, true);
    }),
  );
});

test('any single edit, deletion, insertion or swap of a sealed row is detected at that row', () => {
  fc.assert(
    fc.property(ledger, change, (rows, c) => {
      const seals = seal(rows, c.size);
      const i = c.at % rows.length;
      const row = rows[i] ?? {};
      const id = Number(row['id']);
      const tampered = rows.map((r) => ({ ...r }));
      let expected: [number, string];
      if (c.kind === 'edit') {
        tampered[i] = { ...row, detail: `${String(row['detail'])} ` };
        expected = [id, 'edited'];
      } else if (c.kind === 'delete') {
        tampered.splice(i, 1);
        expected = [id, 'missing'];
      } else if (c.kind === 'insert') {
        tampered.push({ ...row, id: 0 });
        expected = [0, 'inserted'];
      } else {
        const j = c.other % rows.length;
        const other = rows[j] ?? {};
        if (j === i || rowContent(other) === rowContent(row)) return;
        tampered[i] = { ...other, id };
        tampered[j] = { ...row, id: other['id'] };
        const same = Math.floor(i / c.size) === Math.floor(j / c.size);
        expected = [Math.min(id, Number(other['id'])), same ? 'reordered' : 'edited'];
      }
      const report = verify(seals, tampered);
      assert.equal(report.ok, false);
      assert.deepEqual([report.firstBad?.id, report.firstBad?.problem], expected);
    }),
  );
});
