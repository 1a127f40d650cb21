/**
 * Retention: `baton audit prune --before <date>` removes whole sealed checkpoints whose rows are
 * all older than the date, with their rows, and leaves a signed prune record in their place that
 * attests the hash of the last one removed. The chain then still verifies over what remains, and
 * the range reads as pruned, not as missing. A checkpoint straddling the date is kept whole, so up
 * to one checkpoint's rows (8,192) older than the date may stay. The ledger must verify first:
 * pruning never deletes the evidence of tampering.
 */
import { ConflictError } from '../../core/errors.js';
import type { Checkpoint } from '../../core/ledger.js';
import type { Instant } from '../../core/time.js';
import type { Store } from '../../store/store.js';
import type { LedgerSigner } from './keys.js';
import { assertKeyUsable, assertStillHolds, signCheckpoint, type KnownCheckpoint } from './seal.js';
import { verifyLedger } from './verify.js';

export interface PruneOptions {
  readonly before: Instant;
  /** Rows removed per prune record (one transaction each), at most. */
  readonly batchRowsMax?: number;
  /** A checkpoint known outside the database that it must still hold (seal.ts assertStillHolds). */
  readonly follows?: KnownCheckpoint;
}

export interface PruneResult {
  readonly records: readonly Checkpoint[];
  readonly removed: number;
}

const ATTEMPTS_MAX = 20;

async function allCheckpoints(store: Store): Promise<Checkpoint[]> {
  const all: Checkpoint[] = [];
  for (;;) {
    const page = await store.ledger.checkpoints({ afterSeq: all.at(-1)?.seq ?? 0, limit: 500 });
    all.push(...page);
    if (page.length < 500) return all;
  }
}

/** The oldest seal checkpoints, in order, whose rows are all older than `before`, up to `rowsMax` rows. */
async function prunable(
  store: Store,
  seals: readonly Checkpoint[],
  before: Instant,
  rowsMax: number,
): Promise<Checkpoint[]> {
  const out: Checkpoint[] = [];
  let rows = 0;
  for (const checkpoint of seals) {
    if (out.length > 0 && rows + checkpoint.rowCount > rowsMax) break;
    const newest = await store.ledger.newestAt(checkpoint.firstId, checkpoint.lastId);
    if (newest === null || newest >= before) break;
    out.push(checkpoint);
    rows += checkpoint.rowCount;
  }
  return out;
}

export async function pruneLedger(
  store: Store,
  signer: LedgerSigner,
  options: PruneOptions,
): Promise<PruneResult> {
  await assertKeyUsable(store, signer);
  if (options.follows !== undefined) await assertStillHolds(store, options.follows, signer);
  const report = await verifyLedger(store);
  if (!report.ok) {
    const bad = report.firstBad;
    throw new ConflictError(
      `the ledger does not verify (row ${bad?.id ?? '?'} ${bad?.problem ?? ''}): prune refuses to delete evidence`,
      'run `baton audit verify` and find out what happened first',
    );
  }
  const records: Checkpoint[] = [];
  let removed = 0;
  for (let attempt = 0; attempt < ATTEMPTS_MAX;) {
    const all = await allCheckpoints(store);
    const newest = all.at(-1);
    const batch = await prunable(
      store,
      all.filter((checkpoint) => checkpoint.kind === 'seal'),
      options.before,
      options.batchRowsMax ?? 50_000,
    );
    const through = batch.at(-1);
    if (newest === undefined || through === undefined) break;
    const prunedThrough = Math.max(
      0,
      ...all.filter((checkpoint) => checkpoint.kind === 'prune').map((checkpoint) => checkpoint.lastId),
    );
    const record = signCheckpoint(
      {
        seq: newest.seq + 1,
        kind: 'prune',
        firstId: prunedThrough + 1,
        lastId: through.lastId,
        rowCount: batch.reduce((sum, checkpoint) => sum + checkpoint.rowCount, 0),
        root: through.hash,
        prevHash: newest.hash,
        keyId: signer.keyId,
        sealedAt: await store.now(),
        throughSeq: through.seq,
      },
      signer,
    );
    const done = await store.ledger.prune(record);
    if (done === null) {
      attempt++; // a sealer appended meanwhile: read again
      continue;
    }
    records.push(record);
    removed += done.removed;
  }
  return { records, removed };
}
