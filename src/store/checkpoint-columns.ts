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

export function checkpointOf<Time>(r: CheckpointColumns<Time>, at: (t: Time) => Instant): Checkpoint {
  return {
    seq: r.seq,
    kind: r.kind as CheckpointKind,
    firstId: r.first_id,
    lastId: r.last_id,
    rowCount: r.row_count,
    root: r.root,
    prevHash: r.prev_hash,
    hash: r.hash,
    keyId: r.key_id,
    signature: r.signature,
    sealedAt: at(r.sealed_at),
    throughSeq: r.through_seq,
  };
}
