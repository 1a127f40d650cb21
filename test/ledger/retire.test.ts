/**
 * Retiring a ledger key (`baton ledger retire`), on both engines: a key that leaked is rotated,
 * then retired. The retirement is a `ledger:key-retired` row, sealed like any other; from it on
 * no sealer signs with the key, and `baton audit verify` (in the database and from an export)
 * fails a checkpoint the key signed over the retirement or after it, while the checkpoints it
 * signed before still verify. The forger holds the old key and the database: they sign with it
 * in their own code and append the checkpoint as an owner of the database can.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createKeyFile, sha256Hex, type LedgerSigner } from '../../src/coordinator/ledger/keys.js';
import { signCheckpoint } from '../../src/coordinator/ledger/seal.js';
import { LEAF_BYTES, rowContent, rowId, writeLeaf, type Checkpoint } from '../../src/core/ledger.js';
import { systemClock } from '../../src/daemon/clock.js';
import { LedgerSealer } from '../../src/daemon/sealer.js';
import { sealingLine } from '../../src/cli/commands/up-ledger.js';
import { RETIRED_KEY_FIX } from '../../src/core/doctor.js';
import { bothEngines } from '../support/databases.js';
import { cliOn, repoRoot, type Run } from '../support/cli.js';
import { someActivity, withLedger, type LedgerFixture } from './ledger-fixture.js';

interface Verdict {
  readonly ok: boolean;
  readonly problemCount: number;
  readonly problems: readonly { id: number; problem: string; checkpoint: number | null; detail: string }[];
}

interface Retired {
  readonly keyId: string;
  readonly row: number;
}

const checkpoints = (f: LedgerFixture): Promise<readonly Checkpoint[]> =>
  f.store.ledger.checkpoints({ afterSeq: 0, limit: 100 });

/** A second key, made and registered as `baton ledger init --rotate` does. */
async function rotate(f: LedgerFixture): Promise<{ signer: LedgerSigner; file: string }> {
  const file = join(f.dir, 'new.key');
  const signer = createKeyFile(file);
  await f.baton.ledger.addKey(signer);
  return { signer, file };
}

/**
 * What the holder of a leaked key can do with the database: seal every row not sealed yet into
 * one checkpoint signed with that key, in code of their own (no sealer's check), appended as the
 * store appends any seal.
 */
async function forgeSeal(f: LedgerFixture, signer: LedgerSigner): Promise<Checkpoint> {
  const [newest] = (await checkpoints(f)).slice(-1);
  const through = newest?.lastId ?? 0;
  const rows = await f.store.ledger.rows({ afterId: through, limit: 8000 });
  const leaves = new Uint8Array(rows.length * LEAF_BYTES);
  rows.forEach((row, index) => writeLeaf(leaves, index, rowId(row), sha256Hex(rowContent(row))));
  const checkpoint = signCheckpoint(
    {
      seq: (newest?.seq ?? 0) + 1,
      kind: 'seal',
      firstId: through + 1,
      lastId: rowId(rows.at(-1) ?? {}),
      rowCount: rows.length,
      root: sha256Hex(leaves),
      prevHash: newest?.hash ?? '0'.repeat(64),
      keyId: signer.keyId,
      sealedAt: await f.store.now(),
      throughSeq: null,
    },
    signer,
  );
  assert.ok(await f.store.ledger.append(checkpoint, leaves), 'the store takes the forged checkpoint');
  return checkpoint;
}

/**
 * `baton audit verify`, in the database and from a whole export, with the same verdict; and from an
 * export filtered to `task` when given (`--partial`; it carries the retirement rows too), with the
 * same problems.
 */
async function verifyBoth(f: LedgerFixture, code: number, task?: string): Promise<Verdict> {
  const cli = cliOn(f.url);
  const inDb = await cli.json<Verdict>(code, 'audit', 'verify');
  for (const filter of task === undefined ? [[]] : [[], ['--task', task]]) {
    const file = join(f.dir, `export-${filter.length}-${Date.now()}.jsonl`);
    const exported = await cli.run('audit', 'export', '--format', 'jsonl', '--out', file, ...filter);
    assert.equal(exported.code, 0, exported.stderr);
    const partial = filter.length > 0 ? ['--partial'] : [];
    const offline = await cli.json<Verdict>(code, 'audit', 'verify', '--file', file, ...partial);
    assert.deepEqual(
      offline.problems,
      inDb.problems,
      `the export ${filter.join(' ')} verifies as the database does`,
    );
  }
  return inDb;
}

function sealer(f: LedgerFixture, signer: LedgerSigner): LedgerSealer {
  const options = { store: f.store, signer, leading: () => true, clock: systemClock };
  return new LedgerSealer({ ...options, intervalMs: 60_000, anchorFile: null });
}

/** The CLI with extra environment (BATON_URL: remote mode). */
function cliWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<Run> {
  return new Promise((done) => {
    const options = { cwd: repoRoot(), env: { ...process.env, ...env } };
    execFile(process.execPath, ['bin/baton.js', ...args], options, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

for (const engine of bothEngines()) {
  void describe(`retiring a ledger key on ${engine.name}`, () => {
    test('retire refuses an unknown key, the last key and a second retirement, changing nothing', () =>
      withLedger(engine, async (f) => {
        const cli = cliOn(f.url);
        const old = f.signer.keyId;
        const rows = async (): Promise<number> =>
          (await cli.json<unknown[]>(0, 'audit', '--type', 'ledger:key-retired')).length;
        const refusals: [string[], number, RegExp][] = [
          [[old], 3, /^baton: ledger key \w+ is the last key that is not retired: nothing could seal/],
          [['0123456789abcdef'], 4, /^baton: ledger key 0123456789abcdef not found — list the ledger keys/],
          [['not-a-key'], 2, /^baton: "not-a-key" is not a ledger key id/],
        ];
        for (const [args, code, message] of refusals) {
          const refused = await cli.run('ledger', 'retire', ...args);
          assert.equal(refused.code, code, refused.stderr);
          assert.match(refused.stderr, message);
          assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
        }
        assert.equal(await rows(), 0, 'nothing written');
        const fresh = await rotate(f);
        const retired = await cli.json<Retired>(0, 'ledger', 'retire', old);
        assert.equal(retired.keyId, old);
        const [row] = await cli.json<{ id: number; detail: { keyId: string; by?: string } }[]>(
          0,
          'audit',
          '--type',
          'ledger:key-retired',
        );
        assert.deepEqual([row?.id, row?.detail.keyId], [retired.row, old]);
        assert.match(row?.detail.by ?? '', /@/, 'the row names the operator who retired the key');
        const again = await cli.run('ledger', 'retire', old);
        assert.equal(again.code, 3, again.stderr);
        assert.match(again.stderr, /^baton: ledger key \w+ is retired already/);
        const last = await cli.run('ledger', 'retire', fresh.signer.keyId);
        assert.equal(last.code, 3, last.stderr);
        assert.match(last.stderr, /is the last key that is not retired/);
        assert.equal(await rows(), 1, 'one retirement, the first');
        const listed = await cli.json<{ keys: { id: string; retiredByRow: number | null }[] }>(
          0,
          'ledger',
          'key',
        );
        assert.deepEqual(
          listed.keys.map((key) => [key.id, key.retiredByRow]).sort(),
          [
            [old, retired.row],
            [fresh.signer.keyId, null],
          ].sort(),
        );
        const remote = await cliWith(
          { BATON_URL: 'http://127.0.0.1:9', BATON_TOKEN: 'baton_unused', BATON_DB: '' },
          'ledger',
          'retire',
          fresh.signer.keyId,
        );
        assert.equal(remote.code, 2, remote.stderr);
        assert.match(remote.stderr, /^baton: baton ledger retire does not work over the HTTP API/);
        assert.equal(await rows(), 1);
      }));

    test('no sealer signs with a retired key: audit seal, a new sealer, and one already running', () =>
      withLedger(engine, async (f) => {
        const cli = cliOn(f.url);
        const running = sealer(f, f.signer);
        await someActivity(f.store);
        assert.equal((await running.sealNow()).length, 1, 'the key seals before its retirement');
        const fresh = await rotate(f);
        const { row } = await f.baton.ledger.retireKey(f.signer.keyId);
        await someActivity(f.store, 'b');
        const wasRetired = new RegExp(
          `the ledger key ${f.signer.keyId} was retired \\(row ${row}, ledger:key-retired\\): ` +
            `it signs nothing more; seal with ${fresh.signer.keyId}`,
        );
        // baton up's start line says the retired key does not seal, and how to fix it; the new one seals.
        const line = await sealingLine(f.store, f.signer);
        assert.match(
          line,
          new RegExp(`^not sealing the ledger: its key ${f.signer.keyId} was retired \\(row ${row}\\)`),
        );
        assert.ok(line.endsWith(RETIRED_KEY_FIX), line);
        assert.equal(
          await sealingLine(f.store, fresh.signer),
          `sealing the ledger with key ${fresh.signer.keyId}`,
        );
        const refused = await cli.run('audit', 'seal', '--key-file', f.keyFile);
        assert.equal(refused.code, 3, refused.stderr);
        assert.match(refused.stderr, new RegExp(`^baton: ${wasRetired.source}`));
        assert.equal(refused.stderr.trim().split('\n').length, 1);
        // The running sealer checked its key at its first round: it finds the retirement among the rows.
        await assert.rejects(running.sealNow(), wasRetired);
        await assert.rejects(sealer(f, f.signer).sealNow(), wasRetired);
        assert.equal((await checkpoints(f)).length, 1, 'nothing signed');
        await cli.json(0, 'audit', 'seal', '--key-file', fresh.file);
        // The retirement row is sealed now, out of the running sealer's sight: it still refuses.
        await someActivity(f.store, 'c');
        await assert.rejects(running.sealNow(), wasRetired);
        const keys = (await checkpoints(f)).map((checkpoint) => checkpoint.keyId);
        assert.deepEqual(keys, [f.signer.keyId, fresh.signer.keyId]);
        await verifyBoth(f, 0);
      }));

    test('verify fails a checkpoint forged with the retired key after its retirement; earlier ones verify', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        const fresh = await rotate(f);
        const { row } = await f.baton.ledger.retireKey(f.signer.keyId);
        await someActivity(f.store, 'b');
        await f.baton.ledger.seal(fresh.signer);
        assert.equal(
          (await verifyBoth(f, 0)).ok,
          true,
          "the old key's checkpoint before the retirement verifies",
        );
        await someActivity(f.store, 'c');
        const forged = await forgeSeal(f, f.signer);
        const verdict = await verifyBoth(f, 1, 'task-c0');
        assert.equal(verdict.problemCount, 1, JSON.stringify(verdict.problems));
        const [problem] = verdict.problems;
        assert.deepEqual([problem?.checkpoint, problem?.id, problem?.problem], [3, forged.firstId, 'edited']);
        assert.match(
          problem?.detail ?? '',
          new RegExp(
            `checkpoint 3 \\(rows \\d+\\.\\.\\d+\\) is signed by key ${f.signer.keyId}, which row ${row}`,
          ),
        );
      }));

    test('verify fails a checkpoint forged with the retired key over its own retirement row', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        await rotate(f);
        const { row } = await f.baton.ledger.retireKey(f.signer.keyId);
        await someActivity(f.store, 'b');
        const forged = await forgeSeal(f, f.signer);
        assert.ok(
          forged.firstId < row && row <= forged.lastId,
          'the forged checkpoint covers the retirement',
        );
        const verdict = await verifyBoth(f, 1, 'task-b0');
        assert.equal(verdict.problemCount, 1, JSON.stringify(verdict.problems));
        assert.equal(verdict.problems[0]?.checkpoint, 2);
        assert.match(
          verdict.problems[0]?.detail ?? '',
          new RegExp(`which row ${row} \\(ledger:key-retired\\) retired`),
        );
      }));

    test('a retirement outlives a prune of its row: restated after the pruned range', () =>
      withLedger(engine, async (f) => {
        const cli = cliOn(f.url);
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        const fresh = await rotate(f);
        const { row } = await f.baton.ledger.retireKey(f.signer.keyId);
        await cli.json(0, 'audit', 'seal', '--key-file', fresh.file);
        await cli.json(0, 'audit', 'prune', '--before', '2999-01-01', '--key-file', fresh.file);
        const rows = await cli.json<{ id: number; detail: { keyId: string; restates?: number } }[]>(
          0,
          'audit',
          '--type',
          'ledger:key-retired',
        );
        assert.deepEqual(
          rows.map((entry) => [entry.detail.keyId, entry.detail.restates]),
          [[f.signer.keyId, row]],
          'the pruned retirement, written again',
        );
        const restated = rows[0]?.id ?? 0;
        assert.ok(restated > row);
        const refused = await cli.run('audit', 'seal', '--key-file', f.keyFile);
        assert.equal(refused.code, 3, refused.stderr);
        assert.match(refused.stderr, new RegExp(`was retired \\(row ${restated}, ledger:key-retired\\)`));
        await cli.json(0, 'audit', 'seal', '--key-file', fresh.file);
        await someActivity(f.store, 'b');
        await forgeSeal(f, f.signer);
        const verdict = await verifyBoth(f, 1);
        assert.equal(verdict.problemCount, 1, JSON.stringify(verdict.problems));
        assert.match(
          verdict.problems[0]?.detail ?? '',
          new RegExp(`which row ${restated} \\(ledger:key-retired\\)`),
        );
      }));

    test('verify --retired fails a ledger whose retirement a prune forged with the old key removed', () =>
      withLedger(engine, async (f) => {
        const cli = cliOn(f.url);
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        const fresh = await rotate(f);
        await f.baton.ledger.retireKey(f.signer.keyId);
        await f.baton.ledger.seal(fresh.signer);
        const retired = ['--retired', f.signer.keyId];
        assert.equal((await cli.json<Verdict>(0, 'audit', 'verify', ...retired)).ok, true);
        // The forger prunes everything sealed with a record signed by the old key, and removes the
        // restated retirement before anything seals it; then the old key seals again.
        const [first, second] = await checkpoints(f);
        assert.ok(first !== undefined && second !== undefined);
        const record = signCheckpoint(
          {
            ...{ seq: 3, kind: 'prune', firstId: 1, lastId: second.lastId, root: second.hash },
            ...{ rowCount: first.rowCount + second.rowCount, prevHash: second.hash, throughSeq: 2 },
            ...{ keyId: f.signer.keyId, sealedAt: await f.store.now() },
          },
          f.signer,
        );
        assert.ok(await f.store.ledger.prune(record));
        await f.attacker.unguard();
        await f.attacker.exec(`DELETE FROM audit_events WHERE type = 'ledger:key-retired'`);
        await someActivity(f.store, 'b');
        await forgeSeal(f, f.signer);
        assert.equal((await verifyBoth(f, 0)).ok, true, 'without --retired the ledger looks intact');
        const file = join(f.dir, 'forged.jsonl');
        assert.equal((await cli.run('audit', 'export', '--format', 'jsonl', '--out', file)).code, 0);
        for (const source of [[], ['--file', file]]) {
          const verdict = await cli.json<Verdict>(1, 'audit', 'verify', ...retired, ...source);
          assert.equal(verdict.problemCount, 1, JSON.stringify(verdict.problems));
          assert.match(
            verdict.problems[0]?.detail ?? '',
            new RegExp(`key ${f.signer.keyId} was retired \\(--retired\\), yet the ledger holds no`),
          );
        }
      }));
  });
}
