/**
 * An audit_checkpoints row as both engines select it, and the one mapping to the domain: the
 * engines differ only in how `sealed_at` comes back (a Date from pg, milliseconds from SQLite),
 * which each decodes with the `at` it passes.
 */
import type { Checkpoint, CheckpointKind } from '../core/ledger.js';
import type { Instant } from '../core/time.js';

export interface CheckpointColumns<Time> {
  seq: number;
  kind: string;
  first_id: number;
  last_id: number;
  row_count: number;
  root: string;
  prev_hash: string;
  hash: string;
  key_id: string;
  signature: string;
  sealed_at: Time;
  through_seq: number | null;
}

export const CHECKPOINT_COLUMNS = `seq, kind, first_id, last_id, row_count, root, prev_hash, hash, key_id, signature,
  sealed_at, through_seq`;

export function checkpointOf<Time>(row: CheckpointColumns<Time>, at: (t: Time) => Instant): Checkpoint {
  return {
    seq: row.seq,
    kind: row.kind as CheckpointKind,
    firstId: row.first_id,
    lastId: row.last_id,
    rowCount: row.row_count,
    root: row.root,
    prevHash: row.prev_hash,
    hash: row.hash,
    keyId: row.key_id,
    signature: row.signature,
    sealedAt: at(row.sealed_at),
    throughSeq: row.through_seq,
  };
}

/**
 * A seal's leaves as the driver read them (a Buffer), seen as a Uint8Array without a copy: the
 * leaves of a full checkpoint are 320 KB, and an export or a verify reads every checkpoint's.
 */
export function leavesView(bytes: Buffer): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
