/** The background sealer of `baton up`: seals while leading, never while a standby. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendAnchors } from '../coordinator/ledger/anchor.js';
import { createKeyFile } from '../coordinator/ledger/keys.js';
import { verifyLedger } from '../coordinator/ledger/verify.js';
import { openStore } from '../store/open.js';
import { systemClock } from './clock.js';
import { LedgerSealer } from './sealer.js';

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'baton-sealer-'));
  const store = await openStore(join(dir, 'baton.db'));
  const signer = createKeyFile(join(dir, 'ledger.key'));
  await store.ledger.addKey({ id: signer.keyId, publicKey: signer.publicKey });
  await store.tasks.add({ key: 'k' });
  return { dir, store, signer };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** A sealer on the setup's store, asking every `intervalMs` whether it leads. */
function sealerOn(
  { store, signer }: Setup,
  anchorFile: string | null,
  { intervalMs = 10, leading = () => true }: { intervalMs?: number; leading?: () => boolean } = {},
): LedgerSealer {
  return new LedgerSealer({ store, signer, leading, clock: systemClock, intervalMs, anchorFile });
}

test('seals the ledger in the background while leading, with an anchor line per checkpoint', async () => {
  const given = await setup();
  const { dir, store } = given;
  const anchorFile = join(dir, 'anchors.jsonl');
  const sealer = sealerOn(given, anchorFile);
  try {
    const sealed = once(sealer, 'sealed');
    sealer.start();
    const [checkpoints] = (await sealed) as [readonly { seq: number }[]];
    assert.equal(checkpoints[0]?.seq, 1);
    const report = await verifyLedger(store);
    assert.equal(report.ok, true);
    assert.equal(report.unsealed.count, 0);
  } finally {
    await sealer.stop();
    await store.close();
  }
});

test('does not seal while a standby', async () => {
  const given = await setup();
  const { store } = given;
  let asked = 0;
  let answer: () => void = () => undefined;
  const askedThrice = new Promise<void>((resolve) => (answer = resolve));
  const leading = (): boolean => {
    if (++asked === 3) answer();
    return false;
  };
  const sealer = sealerOn(given, null, { intervalMs: 5, leading });
  try {
    sealer.start();
    await askedThrice;
    assert.deepEqual(await store.ledger.checkpoints({ afterSeq: 0, limit: 10 }), []);
  } finally {
    await sealer.stop();
    await store.close();
  }
});

test('anchor lines an append could not write are appended by the next round that can', async () => {
  const given = await setup();
  const { dir, store } = given;
  const anchorFile = join(dir, 'anchors.jsonl');
  mkdirSync(anchorFile); // a folder where the file should be: every append fails
  const sealer = sealerOn(given, anchorFile);
  try {
    const failed = once(sealer, 'failed');
    sealer.start();
    const [error] = (await failed) as [Error];
    assert.match(error.message, /^the ledger is sealed, but 1 anchor line\(s\) could not be appended to /);
    assert.equal((await store.ledger.checkpoints({ afterSeq: 0, limit: 10 })).length, 1, 'sealed');
    rmdirSync(anchorFile);
    await store.tasks.add({ key: 'k2' });
    const deadline = Date.now() + 20_000;
    const lines = () =>
      existsSync(anchorFile) ? readFileSync(anchorFile, 'utf8').trim().split('\n').filter(Boolean) : [];
    while (lines().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const seqs = lines().map((line) => (JSON.parse(line) as { seq: number }).seq);
    assert.deepEqual(seqs, [1, 2], 'the late line first, then the new one');
  } finally {
    await sealer.stop();
    await store.close();
  }
});

test("an anchor file's missing folders are made one by one; under /proc that fails at once, not for ever", () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-anchor-dirs-'));
  const nested = join(dir, 'a', 'b', 'anchors.jsonl');
  appendAnchors(nested, []);
  assert.equal(existsSync(nested), false, 'no lines, no file');
  const anchor = { format: 'baton-ledger-anchor', seq: 1 } as unknown as Parameters<
    typeof appendAnchors
  >[1][0];
  appendAnchors(nested, [anchor]);
  assert.equal((JSON.parse(readFileSync(nested, 'utf8')) as { seq: number }).seq, 1);
  // Node 20's recursive mkdir retries ENOENT under /proc for ever: run it where a hang is bounded.
  const module = new URL('../coordinator/ledger/anchor.js', import.meta.url).href;
  const script = `import(${JSON.stringify(module)}).then((m) => m.appendAnchors('/proc/baton-none/a/x.jsonl', [{}]))`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(child.signal, null, 'it returned instead of hanging');
  assert.match(child.stderr, /ENOENT|EACCES|EROFS/);
});

test('under load the next round comes after 100 ms, not the interval; idle, after the interval', async () => {
  const given = await setup();
  const { store } = given;
  // The pauses the sealer asks its clock for, the real clock doing the waiting.
  const pauses: number[] = [];
  const clock = {
    ...systemClock,
    sleep: (ms: number, signal?: AbortSignal) => {
      pauses.push(ms);
      return systemClock.sleep(Math.min(ms, 20), signal);
    },
  };
  for (let n = 0; n < 1100; n++) await store.tasks.add({ key: `busy-${n}` });
  const sealer = new LedgerSealer({
    store,
    signer: given.signer,
    leading: () => true,
    clock,
    intervalMs: 2000,
    anchorFile: null,
  });
  try {
    const rounds: number[] = [];
    sealer.on('sealed', (sealed) => rounds.push(sealed.reduce((sum, c) => sum + c.rowCount, 0)));
    sealer.start();
    while (pauses.length < 3) await new Promise((r) => setTimeout(r, 10));
    assert.ok((rounds[0] ?? 0) >= 1024, `the first round sealed ${rounds[0]} rows`);
    assert.deepEqual(pauses.slice(0, 3), [2000, 100, 2000], 'busy after 1,100 rows, then idle');
  } finally {
    await sealer.stop();
    await store.close();
  }
});
