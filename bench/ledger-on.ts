/**
 * "Tamper evidence on" for a drain: a ledger key registered, and the sealer of `baton up`'s leader
 * running in a process of its own (sealer-proc.ts) for the whole drain, every 500 ms (a quarter of
 * `baton up`'s default, so it seals several times inside even a quick drain). When the drain ends,
 * the sealer seals what it has not sealed yet, and that time is charged to the drain (`catchUpMs`):
 * a sealer that falls behind during the drain would otherwise do its work after the clock stopped
 * and make "on" look as fast as "off". Then, not timed, the whole ledger must verify.
 *
 * The sealer starts warm, as the one in a long-running `baton up` is: before it is started, the
 * ledger gets WARMUP_ROWS rows shaped as the drain's (seed.ts seedLedgerWarmup), which it seals
 * before saying it is ready, so V8 has compiled its reading, hashing and signing by the time the
 * drain starts. Started cold, a fresh process spent 14-16.5 µs of CPU per drained job during a
 * 20,000-job drain instead of 6-8.5, and its catch-up took 337-398 ms instead of 239-272
 * (docs/decisions/0011, "Session of 2026-12-03, 18:10-"). The "on" drain then runs on a ledger
 * that many rows longer than the "off" one. On PostgreSQL the database is then readied again
 * (pg-server.ts readyForDrain: VACUUM ANALYZE, CHECKPOINT), as the seed left it, so the "on" drain
 * starts as far from a checkpoint as the "off" one and with the ledger's statistics current.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKeyFile } from '../src/coordinator/ledger/keys.js';
import { sealLedger } from '../src/coordinator/ledger/seal.js';
import { verifyLedger } from '../src/coordinator/ledger/verify.js';
import { openStore } from '../src/store/open.js';
import type { SealerMessage } from './sealer-proc.js';
import { readyForDrain, withClient } from './pg-server.js';
import { seedLedgerWarmup } from './seed.js';

const SEALER = fileURLToPath(new URL('./sealer-proc.js', import.meta.url));
export const SEAL_INTERVAL_MS = 500;
/**
 * Rows for the sealer to warm up on, whatever the drain's size: enough for V8 to have optimised
 * its per-row code (half of a full 20,000-job drain's 40,000 rows; 10-20 times a --quick drain's).
 */
export const WARMUP_ROWS = 20_000;

export interface Sealing {
  /** Rows the background sealer sealed while the drain ran. */
  readonly rowsSealedDuring: number;
  readonly checkpoints: number;
  /** ms from the drain's end until every row was sealed. */
  readonly catchUpMs: number;
}

/**
 * Watches the sealer over the drain (sealer-cost.ts): called with the sealer's pid once it is ready
 * and the database readied, just before the drain; what it returns is called when the drain ends.
 */
export type SealerWatch = (sealerPid: number) => Promise<() => Promise<void>>;

/** Runs `drain` with the sealer beside it; null work runs without (tamper evidence off). */
export async function withSealer<T>(
  url: string,
  drain: () => Promise<T>,
  watch?: SealerWatch,
): Promise<{ result: T; sealing: Sealing }> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-key-'));
  try {
    const keyFile = join(dir, 'ledger.key');
    const signer = createKeyFile(keyFile);
    const store = await openStore(url);
    try {
      await store.ledger.addKey({ id: signer.keyId, publicKey: signer.publicKey });
    } finally {
      await store.close();
    }
    await seedLedgerWarmup(url, WARMUP_ROWS);
    const child = fork(SEALER, [url, keyFile, String(SEAL_INTERVAL_MS)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const [ready] = (await once(child, 'message')) as [SealerMessage];
    if (ready.type !== 'ready') throw new Error('bench: the sealer did not start');
    if (url.startsWith('postgres')) await withClient(url, readyForDrain);
    const watched = watch === undefined || child.pid === undefined ? null : await watch(child.pid);
    let result: T;
    try {
      result = await drain();
      await watched?.();
    } finally {
      child.send({ type: 'stop' });
    }
    const [stopped] = (await once(child, 'message')) as [SealerMessage];
    if (stopped.type !== 'stopped' || stopped.failures > 0) throw new Error('bench: the sealer failed');
    await finalCheck(url, signer);
    const { rows, checkpoints, catchUpMs } = stopped;
    return { result, sealing: { rowsSealedDuring: rows, checkpoints, catchUpMs } };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function finalCheck(url: string, signer: ReturnType<typeof createKeyFile>): Promise<void> {
  const store = await openStore(url);
  try {
    await sealLedger(store, signer);
    const report = await verifyLedger(store, { publicKeys: [signer.publicKey] });
    if (!report.ok || report.unsealed.count > 0) {
      throw new Error(`bench: the sealed ledger does not verify: ${JSON.stringify(report.firstBad)}`);
    }
  } finally {
    await store.close();
  }
}
