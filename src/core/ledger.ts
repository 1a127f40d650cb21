/**
 * Tamper evidence for the ledger, as data (docs/decisions/0011-tamper-evident-ledger.md). Rows are
 * written as before, on the hot path, with nothing extra; a sealer later covers settled rows with
 * a signed **checkpoint**: the ids and content hashes of its rows (the leaves), their hash (the
 * root), the previous checkpoint's hash (the chain) and an Ed25519 signature over its own hash.
 * A **prune** record is a checkpoint too: it attests the hash of the last checkpoint it removed, so
 * the chain still verifies over what remains.
 *
 * A row's content is every column but `id`, read generically (`SELECT *`; times on PostgreSQL as
 * the server prints them), without its NULL columns, as canonical JSON: a column added later (the token of
 * issue 17) is covered from then on, and old rows, NULL there, keep their hashes. The id is bound
 * by the leaf, so a row moved to another id is told apart from an edited one.
 */

import type { Instant } from './time.js';

export type CheckpointKind = 'seal' | 'prune';

export interface Checkpoint {
  /** 1, 2, 3 … in the order written; the chain follows it. */
  readonly seq: number;
  readonly kind: CheckpointKind;
  /** Seal: the ids it covers are firstId..lastId (gaps allowed). Prune: the ids removed. */
  readonly firstId: number;
  readonly lastId: number;
  /** Seal: the rows it covers. Prune: the rows the removed checkpoints covered. */
  readonly rowCount: number;
  /** Seal: the hash of its leaves. Prune: the hash of checkpoint throughSeq, the last one removed. */
  readonly root: string;
  readonly prevHash: string;
  /** sha256 of checkpointText(this): every field above and below but hash and signature. */
  readonly hash: string;
  readonly keyId: string;
  /** Ed25519 over the 32 bytes of `hash`, base64. */
  readonly signature: string;
  /** The database clock when it was written. */
  readonly sealedAt: Instant;
  /** Prune only: the seal checkpoints with seq up to this one were removed. */
  readonly throughSeq: number | null;
}

export type CheckpointFields = Omit<Checkpoint, 'hash' | 'signature'>;

/** One leaf: a sealed row's id and the sha256 (hex) of its content. */
export interface Leaf {
  readonly id: number;
  readonly hash: string;
}

export type LedgerProblemKind = 'edited' | 'missing' | 'inserted' | 'reordered';

export interface LedgerProblem {
  /** The first row id concerned. */
  readonly id: number;
  readonly problem: LedgerProblemKind;
  /** The checkpoint that no longer matches, when one does. */
  readonly checkpoint: number | null;
  readonly detail: string;
}

/** prevHash of the first checkpoint. */
export const GENESIS_HASH = '0'.repeat(64);
/** Rows per seal checkpoint, at most: 40 bytes of leaves each. */
export const CHECKPOINT_ROWS_MAX = 8192;
/** Bytes per leaf: the id (8, big-endian) and the content hash (32). */
export const LEAF_BYTES = 40;

/**
 * JSON with object keys sorted (by UTF-16 code units, as Array.prototype.sort does), recursively;
 * byte arrays as {"$hex": …}. Stable across engines. Written for speed: the sealer and the
 * verifier run it once per ledger row.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return JSON.stringify(value);
  }
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return `{"$hex":"${toHex(value)}"}`;
  if (value instanceof JsonText) return canonicalJson(JSON.parse(value.text));
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  return objectJson(value as Record<string, unknown>, false);
}

function objectJson(record: Readonly<Record<string, unknown>>, asRow: boolean): string {
  let out = '';
  for (const key of Object.keys(record).sort()) {
    const value = record[key];
    if (value === undefined || (asRow && (value === null || key === 'id'))) continue;
    out += `${out === '' ? '' : ','}${JSON.stringify(key)}:${canonicalJson(value)}`;
  }
  return `{${out}}`;
}

/** What a row's content hash covers: every column but the id, NULL columns left out. */
export function rowContent(columns: Readonly<Record<string, unknown>>): string {
  return objectJson(columns, true);
}

/** Distinct JSON texts a RowContents keeps the canonical form of (a read's repeated payloads). */
const JSON_TEXTS_KEPT = 4096;

/**
 * A json or jsonb column's value as PostgreSQL printed it, not parsed: the sealer's read hands
 * these out. It hashes as the value it parses to (canonicalJson parses it), so a row's content is
 * the same text either way; RowContents works each distinct text out once per read, and most rows
 * of a busy ledger carry one of a few payloads (`{}`, a claim's host and attempt).
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * rowContent for the rows of one read, the same text: rows of one read share their columns, so
 * their sorted order and quoted names are worked out once per set of columns, not once per row
 * (the sealer runs it on every ledger row; the verifier's per-row rowContent is the reference).
 */
export class RowContents {
  private columns: readonly string[] = [];
  private order: readonly (readonly [key: string, prefix: string])[] = [];
  private readonly json = new Map<string, string>();

  of(row: Readonly<Record<string, unknown>>): string {
    const columns = Object.keys(row);
    if (!sameStrings(columns, this.columns)) {
      this.columns = columns;
      this.order = columns
        .filter((key) => key !== 'id')
        .sort()
        .map((key) => [key, `${JSON.stringify(key)}:`] as const);
    }
    let out = '';
    for (const [key, prefix] of this.order) {
      const value = row[key];
      if (value === undefined || value === null) continue;
      const fromText = value instanceof JsonText;
      const json = fromText ? this.jsonOf(value.text) : canonicalJson(value);
      // A json column holding JSON `null` is left out as a NULL column is: the verifier reads it
      // parsed, as null, which rowContent leaves out.
      if (fromText && json === 'null') continue;
      out += (out === '' ? prefix : `,${prefix}`) + json;
    }
    return `{${out}}`;
  }

  private jsonOf(text: string): string {
    let json = this.json.get(text);
    if (json === undefined) {
      json = canonicalJson(JSON.parse(text));
      if (this.json.size < JSON_TEXTS_KEPT) this.json.set(text, json);
    }
    return json;
  }
}

function sameStrings(left: readonly string[], right: readonly string[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) if (left[index] !== right[index]) return false;
  return true;
}

/** The row id in a row's columns; a row without a numeric id is not a ledger row. */
export function rowId(columns: Readonly<Record<string, unknown>>): number {
  const id = columns['id'];
  return typeof id === 'number' ? id : typeof id === 'bigint' ? Number(id) : Number.NaN;
}

/** The text a checkpoint's hash is taken of. */
export function checkpointText(fields: CheckpointFields): string {
  return canonicalJson({
    v: 1,
    seq: fields.seq,
    kind: fields.kind,
    firstId: fields.firstId,
    lastId: fields.lastId,
    rowCount: fields.rowCount,
    root: fields.root,
    prevHash: fields.prevHash,
    keyId: fields.keyId,
    sealedAt: fields.sealedAt,
    throughSeq: fields.throughSeq,
  });
}

/** Each ASCII code's value as a lowercase hex digit, -1 when it is none. */
const NIBBLES = Int8Array.from({ length: 128 }, (_, code) =>
  '0123456789abcdef'.indexOf(String.fromCharCode(code)),
);

/**
 * Writes leaf `index` into `bytes` (of leaves): the row's id (8 bytes, big-endian) and its content
 * hash (32 bytes, given as 64 lowercase hex digits). The one home of the layout: the sealer writes
 * each row's leaf with it, straight from its hex digest, and LeafView reads it back. Hex, not the
 * digest's bytes: a digest as bytes is a Buffer, and so an ArrayBuffer, per row, which cost the
 * sealer more (its allocation and its collection) than these 32 table lookups.
 */
export function writeLeaf(bytes: Uint8Array, index: number, id: number, hashHex: string): void {
  if (!Number.isSafeInteger(id)) throw new RangeError(`a leaf's id must be a safe integer, got ${id}`);
  if (hashHex.length !== 2 * (LEAF_BYTES - 8)) throw new RangeError(`a leaf's hash must be 64 hex digits`);
  // Big-endian two's complement, byte by byte (>>> takes each half modulo 2^32): no DataView or
  // BigInt per leaf, which the sealer writes one of per row.
  const at = index * LEAF_BYTES;
  const high = Math.floor(id / 2 ** 32);
  const low = id >>> 0;
  for (let shift = 24, offset = at; shift >= 0; shift -= 8, offset++) {
    bytes[offset] = (high >>> shift) & 0xff;
    bytes[offset + 4] = (low >>> shift) & 0xff;
  }
  for (let byte = 0, offset = at + 8; byte < LEAF_BYTES - 8; byte++, offset++) {
    const high4 = NIBBLES[hashHex.charCodeAt(2 * byte)] ?? -1;
    const low4 = NIBBLES[hashHex.charCodeAt(2 * byte + 1)] ?? -1;
    if ((high4 | low4) < 0) throw new RangeError(`a leaf's hash must be 64 hex digits`);
    bytes[offset] = (high4 << 4) | low4;
  }
}

/** Leaves as bytes, from their ids and hex hashes (tests build checkpoints with it). */
export function encodeLeaves(leaves: readonly Leaf[]): Uint8Array {
  const bytes = new Uint8Array(leaves.length * LEAF_BYTES);
  leaves.forEach((leaf, index) => writeLeaf(bytes, index, leaf.id, leaf.hash));
  return bytes;
}

/**
 * A checkpoint's leaves read in place: an id or a hash is decoded when asked for, so verifying a
 * checkpoint keeps its 320 KB of bytes and no object or string per leaf (8,192 of them, which
 * outlived the checkpoint's rows in V8's old generation).
 */
export class LeafView {
  readonly length: number;
  private readonly view: DataView;

  private constructor(private readonly bytes: Uint8Array) {
    this.length = bytes.length / LEAF_BYTES;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** The leaves of `bytes`; null when the bytes are not a whole number of leaves. */
  static of(bytes: Uint8Array): LeafView | null {
    return bytes.length % LEAF_BYTES === 0 ? new LeafView(bytes) : null;
  }

  id(index: number): number {
    return Number(this.view.getBigInt64(index * LEAF_BYTES));
  }

  /** The content hash (hex) of leaf `index`. */
  hash(index: number): string {
    const at = index * LEAF_BYTES + 8;
    return toHex(this.bytes.subarray(at, at + LEAF_BYTES - 8));
  }
}

const HEX_PAIRS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += HEX_PAIRS[byte] ?? '';
  return out;
}

/** Whether the leaves' ids rise strictly within the checkpoint's range. */
export function inRange(leaves: LeafView, checkpoint: Checkpoint): boolean {
  let previous = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < leaves.length; index++) {
    const id = leaves.id(index);
    if (id < checkpoint.firstId || id > checkpoint.lastId || id <= previous) return false;
    previous = id;
  }
  return true;
}

/** Leaf ids by hash: only built once a row's hash differs from its leaf, to tell a move from an edit. */
export function hashesOf(leaves: LeafView): Map<string, number> {
  const byHash = new Map<string, number>();
  for (let index = 0; index < leaves.length; index++) byHash.set(leaves.hash(index), leaves.id(index));
  return byHash;
}
