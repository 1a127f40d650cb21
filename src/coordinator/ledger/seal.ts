/**
 * Sealing: covers settled ledger rows with signed checkpoints, a few thousand rows each. Run in the
 * background by the leader of `baton up` and on demand by `baton audit seal`; two sealers at once
 * are safe (the store appends a checkpoint only after the newest one, so the slower one stops).
 */
import { ConflictError } from '../../core/errors.js';
import {
  CHECKPOINT_ROWS_MAX,
  checkpointText,
  GENESIS_HASH,
  LEAF_BYTES,
  RowContents,
  rowId,
  type Checkpoint,
  type CheckpointFields,
  writeLeaf,
} from '../../core/ledger.js';
import type { Instant } from '../../core/time.js';
import type { Store } from '../../store/store.js';
import { ledgerCrypto, sha256Hex, type KnownKey, type LedgerSigner } from './keys.js';
import { assertNotRetired, assertNotRetiredIn } from './retire.js';

export interface SealOptions {
  /** Checkpoints written in one call, at most. */
  readonly checkpointsMax?: number;
  /** How long PostgreSQL may wait for in-flight ledger writers (store.ledger.unsealed). */
  readonly settleTimeoutMs?: number;
  /** A checkpoint known from outside the database that it must still hold (assertStillHolds). */
  readonly follows?: KnownCheckpoint;
}

/** A checkpoint known outside the database: anchored in a file, or signed by this process. */
export interface KnownCheckpoint {
  readonly seq: number;
  readonly hash: string;
  /** Where it is known from, for the refusal: `anchored in FILE`, `sealed by this process`. */
  readonly where: string;
  /** Keys known with it from outside the database (an anchor line's): trusted to prune it. */
  readonly keys?: readonly KnownKey[];
}

export interface SealResult {
  readonly sealed: readonly Checkpoint[];
  /** Another sealer appended first; what it sealed is sealed. */
  readonly raced: boolean;
}

const LEAVES_PER_TURN = 1024;
/**
 * Rows read at a time: several checkpoints' worth, so that one settle check (on PostgreSQL a read
 * of pg_locks, which stalls the writers it reads) and one read serve them all.
 */
const CHECKPOINTS_PER_READ = 4;

/**
 * The rows' leaves (core/ledger.ts writeLeaf), a thousand rows per turn of the event loop: the
 * sealer runs inside `baton up`, whose heartbeats and lease renewals must not wait for 8,192
 * hashes. Each hash goes into the bytes from its hex digest, with no Leaf object or Buffer per row.
 */
async function leavesOf(rows: readonly Readonly<Record<string, unknown>>[]): Promise<Uint8Array> {
  const bytes = new Uint8Array(rows.length * LEAF_BYTES);
  const contents = new RowContents();
  for (let index = 0; index < rows.length; index++) {
    if (index > 0 && index % LEAVES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    const columns = rows[index] ?? {};
    writeLeaf(bytes, index, rowId(columns), sha256Hex(contents.of(columns)));
  }
  return bytes;
}

/** The signed checkpoint for these fields. */
export function signCheckpoint(fields: CheckpointFields, signer: LedgerSigner): Checkpoint {
  const hash = sha256Hex(checkpointText(fields));
  return { ...fields, hash, signature: signer.sign(hash) };
}

/**
 * Refuses to sign with a key the database does not list (an auditor could not check it), or one
 * its ledger retired (KeyRetiredError, retire.ts).
 */
export async function assertKeyUsable(store: Store, signer: LedgerSigner): Promise<void> {
  const keys = await store.ledger.keys();
  if (!keys.some((key) => key.id === signer.keyId)) {
    throw new ConflictError(
      `the ledger key ${signer.keyId} is not registered in this database`,
      'run `baton ledger init` against this database, or pass the key file that was registered',
    );
  }
  await assertNotRetired(store, signer, keys);
}

/**
 * Refuses to sign over a ledger that lost or changed a checkpoint known from outside it. Whoever
 * owns the database can delete the newest checkpoints (or all of them) and edit the rows they
 * covered; a sealer that then signed what it found would vouch for the edit with the real key. The
 * checkpoint must still be there with its hash, or have been removed by a prune record that covers
 * it (and attests its hash when it was the last one removed), signed by a key known outside the
 * database too: the signer's own, or the known checkpoint's. A key registered in the database
 * proves nothing here, since whoever rewrote the ledger can register one.
 */
export async function assertStillHolds(
  store: Store,
  known: KnownCheckpoint,
  signer: LedgerSigner,
): Promise<void> {
  const [found] = await store.ledger.checkpoints({ afterSeq: known.seq - 1, limit: 1 });
  let problem = 'has another hash in the database';
  if (found?.seq === known.seq) {
    if (found.hash === known.hash) return;
  } else {
    const prunes = await store.ledger.checkpoints({ afterSeq: known.seq, limit: 1000, kind: 'prune' });
    const prune = prunes.find((record) => (record.throughSeq ?? 0) >= known.seq);
    if (prune === undefined) problem = 'is missing from the database';
    else if (prune.throughSeq !== known.seq || prune.root === known.hash) {
      const ownKey = { id: signer.keyId, publicKey: signer.publicKey };
      const refused = untrustedPrune(prune, [ownKey, ...(known.keys ?? [])]);
      if (refused === null) return;
      problem = `was removed by prune record ${prune.seq}, ${refused}`;
    }
  }
  throw new ConflictError(
    `the ledger was rewritten: checkpoint ${known.seq} (${known.where}) ${problem}; nothing is signed over it`,
    'find out what happened with `baton audit verify --anchor FILE`; after restoring the database from a ' +
      'backup, keep the old anchor file and name a new one',
  );
}

/** Whether this checkpoint is the known one: the same seq and hash. */
function isKnown(checkpoint: Checkpoint | null, known: KnownCheckpoint): boolean {
  return checkpoint !== null && checkpoint.seq === known.seq && checkpoint.hash === known.hash;
}

/**
 * Null when the prune record is intact and signed by one of `trusted`; otherwise what is wrong with
 * it, worded to follow "prune record N".
 */
function untrustedPrune(prune: Checkpoint, trusted: readonly KnownKey[]): string | null {
  const crypto = ledgerCrypto([], trusted);
  if (crypto.sha256(checkpointText(prune)) !== prune.hash) return 'whose hash does not match its fields';
  if (!trusted.some((key) => key.id === prune.keyId)) {
    return `signed by key ${prune.keyId}, which is neither this signer's nor the known checkpoint's`;
  }
  const refused = crypto.checkSignature(prune.keyId, prune.hash, prune.signature);
  return refused === null ? null : refused.replace(/^its /, 'whose ');
}

export async function sealLedger(
  store: Store,
  signer: LedgerSigner,
  options: SealOptions = {},
): Promise<SealResult> {
  const sealed: Checkpoint[] = [];
  const checkpointsMax = options.checkpointsMax ?? 128;
  let follows = options.follows;
  while (sealed.length < checkpointsMax) {
    const limit = Math.min(CHECKPOINTS_PER_READ, checkpointsMax - sealed.length) * CHECKPOINT_ROWS_MAX;
    const unsealed = await store.ledger.unsealed({
      limit,
      ...(options.settleTimeoutMs === undefined ? {} : { settleTimeoutMs: options.settleTimeoutMs }),
    });
    // Before anything is signed. The read's newest checkpoint is, in a sealer's steady state, the
    // one it sealed last: then that one holds, with no read of its own (a round trip every round).
    if (follows !== undefined && !isKnown(unsealed.newest, follows))
      await assertStillHolds(store, follows, signer);
    follows = undefined;
    await assertNotRetiredIn(store, signer, unsealed.rows);
    let after = { newest: unsealed.newest, sealedThrough: unsealed.sealedThrough };
    for (let start = 0; start < unsealed.rows.length; start += CHECKPOINT_ROWS_MAX) {
      const rows = unsealed.rows.slice(start, start + CHECKPOINT_ROWS_MAX);
      const { checkpoint, leaves } = await sealRows(rows, after, unsealed.now, signer);
      if (!(await store.ledger.append(checkpoint, leaves))) return { sealed, raced: true };
      sealed.push(checkpoint);
      after = { newest: checkpoint, sealedThrough: checkpoint.lastId };
    }
    // A checkpoint's worth or more: the sealer is behind the writers; it reads on until it is not.
    if (unsealed.rows.length < CHECKPOINT_ROWS_MAX) break;
  }
  return { sealed, raced: false };
}

/** The seal checkpoint of these rows (at most CHECKPOINT_ROWS_MAX), after `after`'s newest checkpoint. */
async function sealRows(
  rows: readonly Readonly<Record<string, unknown>>[],
  after: { readonly newest: Checkpoint | null; readonly sealedThrough: number },
  now: Instant,
  signer: LedgerSigner,
): Promise<{ checkpoint: Checkpoint; leaves: Uint8Array }> {
  const leaves = await leavesOf(rows);
  const checkpoint = signCheckpoint(
    {
      seq: (after.newest?.seq ?? 0) + 1,
      kind: 'seal',
      firstId: after.sealedThrough + 1,
      lastId: rowId(rows.at(-1) ?? {}),
      rowCount: rows.length,
      root: sha256Hex(leaves),
      prevHash: after.newest?.hash ?? GENESIS_HASH,
      keyId: signer.keyId,
      sealedAt: now,
      throughSeq: null,
    },
    signer,
  );
  return { checkpoint, leaves };
}
