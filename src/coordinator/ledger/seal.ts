/**
 * Sealing: covers settled ledger rows with signed checkpoints, a few thousand rows each. Run in the
 * background by the leader of `baton up` and on demand by `baton audit seal`; two sealers at once
 * are safe (the store appends a checkpoint only after the newest one, so the slower one stops).
 */
import { ConflictError } from '../../core/errors.js';
import {
  CHECKPOINT_ROWS_MAX,
  checkpointText,
  encodeLeaves,
  GENESIS_HASH,
  rowContent,
  rowId,
  type Checkpoint,
  type CheckpointFields,
  type Leaf,
} from '../../core/ledger.js';
import type { Store } from '../../store/store.js';
import { sha256Hex, type LedgerSigner } from './keys.js';

export interface SealOptions {
  /** Checkpoints written in one call, at most. */
  readonly checkpointsMax?: number;
  /** How long PostgreSQL may wait for in-flight ledger writers (store.ledger.unsealed). */
  readonly settleTimeoutMs?: number;
}

export interface SealResult {
  readonly sealed: readonly Checkpoint[];
  /** Another sealer appended first; what it sealed is sealed. */
  readonly raced: boolean;
}

const LEAVES_PER_TURN = 1024;

/**
 * The rows' leaves, a thousand rows per turn of the event loop: the sealer runs inside `baton up`,
 * whose heartbeats and lease renewals must not wait for 8,192 hashes.
 */
async function leavesOf(rows: readonly Readonly<Record<string, unknown>>[]): Promise<Leaf[]> {
  const leaves: Leaf[] = [];
  for (let start = 0; start < rows.length; start += LEAVES_PER_TURN) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const columns of rows.slice(start, start + LEAVES_PER_TURN)) {
      leaves.push({ id: rowId(columns), hash: sha256Hex(rowContent(columns)) });
    }
  }
  return leaves;
}

/** The signed checkpoint for these fields. */
export function signCheckpoint(fields: CheckpointFields, signer: LedgerSigner): Checkpoint {
  const hash = sha256Hex(checkpointText(fields));
  return { ...fields, hash, signature: signer.sign(hash) };
}

/** Refuses to sign with a key the database does not list (an auditor could not check it). */
export async function assertKeyRegistered(store: Store, signer: LedgerSigner): Promise<void> {
  const keys = await store.ledger.keys();
  if (!keys.some((key) => key.id === signer.keyId)) {
    throw new ConflictError(
      `the ledger key ${signer.keyId} is not registered in this database`,
      'run `baton ledger init` against this database, or pass the key file that was registered',
    );
  }
}

export async function sealLedger(
  store: Store,
  signer: LedgerSigner,
  options: SealOptions = {},
): Promise<SealResult> {
  const sealed: Checkpoint[] = [];
  for (let round = 0; round < (options.checkpointsMax ?? 128); round++) {
    const unsealed = await store.ledger.unsealed({
      limit: CHECKPOINT_ROWS_MAX,
      ...(options.settleTimeoutMs === undefined ? {} : { settleTimeoutMs: options.settleTimeoutMs }),
    });
    const last = unsealed.rows.at(-1);
    if (last === undefined) break;
    const leaves = await leavesOf(unsealed.rows);
    const bytes = encodeLeaves(leaves);
    const checkpoint = signCheckpoint(
      {
        seq: (unsealed.newest?.seq ?? 0) + 1,
        kind: 'seal',
        firstId: unsealed.sealedThrough + 1,
        lastId: rowId(last),
        rowCount: leaves.length,
        root: sha256Hex(bytes),
        prevHash: unsealed.newest?.hash ?? GENESIS_HASH,
        keyId: signer.keyId,
        sealedAt: unsealed.now,
        throughSeq: null,
      },
      signer,
    );
    if (!(await store.ledger.append(checkpoint, bytes))) return { sealed, raced: true };
    sealed.push(checkpoint);
    if (unsealed.rows.length < CHECKPOINT_ROWS_MAX) break;
  }
  return { sealed, raced: false };
}
