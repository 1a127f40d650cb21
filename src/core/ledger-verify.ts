/**
 * The ledger verifier: one pass over a stream of checkpoints and rows, in bounded memory (the
 * leaves of one checkpoint at a time). The same machine checks the database (`baton audit
 * verify`) and an export (`--file`), so an export verifies offline exactly as the database does.
 *
 * Stream order: every prune record first (seq order), then each seal checkpoint (seq order) with
 * its leaves, followed by the rows of its range in id order, then the unsealed rows. Hashing and
 * signatures come in through LedgerCrypto, which keeps this file pure.
 */
import { assert } from './assert.js';
import type { Instant } from './time.js';

import {
  checkpointText,
  decodeLeaves,
  GENESIS_HASH,
  rowContent,
  rowId,
  type Checkpoint,
  type Leaf,
  type LedgerProblem,
  type LedgerProblemKind,
} from './ledger.js';

export interface LedgerCrypto {
  /** sha256, hex, of a string's UTF-8 bytes or of bytes. */
  sha256(data: string | Uint8Array): string;
  /** null when `signature` signs `hash` under the key `keyId`; otherwise why not, in words. */
  checkSignature(keyId: string, hash: string, signature: string): string | null;
}

export interface VerifyOptions {
  /** Every row is in the stream (the database, an unfiltered export): a leaf without its row is missing. */
  readonly complete: boolean;
  readonly problemsMax?: number;
}

export interface SeenCheckpoint {
  readonly seq: number;
  readonly kind: Checkpoint['kind'];
  readonly hash: string;
  readonly firstId: number;
  readonly lastId: number;
  readonly rowCount: number;
  readonly root: string;
  readonly throughSeq: number | null;
}

export interface PrunedRange {
  readonly checkpoint: number;
  readonly firstId: number;
  readonly lastId: number;
  readonly rowCount: number;
  readonly prunedAt: Instant;
}

export interface LedgerReport {
  readonly ok: boolean;
  /** Rows read. */
  readonly rows: number;
  readonly seals: number;
  /** The last id covered by a checkpoint (sealed or pruned); 0 when none. */
  readonly sealedThrough: number;
  /** Rows after sealedThrough: written, not yet sealed. */
  readonly unsealed: { readonly count: number; readonly firstId: number | null };
  /** Rows of checkpoints whose leaves the stream did not carry (a filtered export): not checked. */
  readonly unchecked: number;
  readonly pruned: readonly PrunedRange[];
  readonly firstBad: LedgerProblem | null;
  readonly problems: readonly LedgerProblem[];
  readonly problemCount: number;
}

interface Current {
  readonly c: Checkpoint;
  readonly leaves: readonly Leaf[] | null;
  next: number;
  byHash: Map<string, number> | null;
}

export class LedgerVerifier {
  private readonly problems: LedgerProblem[] = [];
  private problemCount = 0;
  private readonly prunes: Checkpoint[] = [];
  private prunedThrough = 0;
  private removedThroughSeq = 0;
  private lastSeal: Checkpoint | null = null;
  private current: Current | null = null;
  private lastRowId = Number.NEGATIVE_INFINITY;
  private rows = 0;
  private seals = 0;
  private unchecked = 0;
  private unsealed = { count: 0, firstId: null as number | null };
  /** Every checkpoint read, by seq: for the anchors and the prune records' own links. */
  readonly seen = new Map<number, SeenCheckpoint>();

  constructor(
    private readonly crypto: LedgerCrypto,
    private readonly options: VerifyOptions,
  ) {}

  /** A checkpoint, with its leaves when the stream carries them. */
  checkpoint(c: Checkpoint, leaves: Uint8Array | null): void {
    this.close();
    this.seen.set(c.seq, { ...c });
    if (!this.checkSelf(c)) return this.kindOf(c);
    if (c.kind === 'prune') return this.prune(c);
    if (c.firstId <= this.lastRowId) {
      this.report(c.firstId, 'reordered', c.seq, `checkpoint ${c.seq} comes after row ${this.lastRowId}`);
    }
    if (this.checkLink(c)) this.checkRange(c);
    this.lastSeal = c;
    this.seals++;
    this.current = { c, leaves: leaves === null ? null : this.checkLeaves(c, leaves), next: 0, byHash: null };
  }

  /** One row's columns, by name, as the engine gives them. */
  row(columns: Readonly<Record<string, unknown>>): void {
    const id = rowId(columns);
    assert(Number.isFinite(id), 'a ledger row has a numeric id');
    this.rows++;
    if (id <= this.lastRowId) {
      this.report(
        id,
        'reordered',
        this.current?.c.seq ?? null,
        `row ${id} comes after row ${this.lastRowId}`,
      );
      return;
    }
    this.lastRowId = id;
    const cur = this.current;
    if (id <= this.prunedThrough) {
      const by = this.prunes.find((p) => id >= p.firstId && id <= p.lastId) ?? this.prunes.at(-1);
      this.report(id, 'inserted', by?.seq ?? null, `row ${id} lies in a pruned range, yet it is there`);
    } else if (cur !== null && id <= cur.c.lastId) {
      this.sealedRow(cur, id, columns);
    } else {
      this.unsealed.count++;
      this.unsealed.firstId ??= id;
    }
  }

  finish(): LedgerReport {
    this.close();
    for (const p of this.prunes) {
      const before = this.seen.get(p.seq - 1);
      if (before !== undefined && before.hash !== p.prevHash) {
        this.report(
          p.firstId,
          'edited',
          p.seq,
          `prune record ${p.seq} does not follow checkpoint ${p.seq - 1}`,
        );
      }
    }
    const problems = [...this.problems].sort((a, b) => a.id - b.id);
    return {
      ok: this.problemCount === 0,
      rows: this.rows,
      seals: this.seals,
      sealedThrough: Math.max(this.lastSeal?.lastId ?? 0, this.prunedThrough),
      unsealed: { ...this.unsealed },
      unchecked: this.unchecked,
      pruned: this.prunes.map((p) => ({
        checkpoint: p.seq,
        firstId: p.firstId,
        lastId: p.lastId,
        rowCount: p.rowCount,
        prunedAt: p.sealedAt,
      })),
      firstBad: problems[0] ?? null,
      problems,
      problemCount: this.problemCount,
    };
  }

  /** Records a problem found outside the stream (an anchor that no longer matches). */
  report(id: number, problem: LedgerProblemKind, checkpoint: number | null, detail: string): void {
    this.problemCount++;
    if (this.problems.length < (this.options.problemsMax ?? 100)) {
      this.problems.push({ id, problem, checkpoint, detail });
    }
  }

  /** A checkpoint whose own hash or signature fails still counts as a seal or a prune. */
  private kindOf(c: Checkpoint): void {
    if (c.kind === 'prune') {
      this.prunes.push(c);
      this.prunedThrough = Math.max(this.prunedThrough, c.lastId);
      return;
    }
    this.lastSeal = c;
    this.seals++;
    this.current = { c, leaves: null, next: 0, byHash: null };
  }

  private checkSelf(c: Checkpoint): boolean {
    const what = c.kind === 'prune' ? 'prune record' : 'checkpoint';
    if (this.crypto.sha256(checkpointText(c)) !== c.hash) {
      this.report(
        c.firstId,
        'edited',
        c.seq,
        `${what} ${c.seq} was altered: its hash does not match its fields`,
      );
      return false;
    }
    const refused = this.crypto.checkSignature(c.keyId, c.hash, c.signature);
    if (refused !== null) {
      this.report(c.firstId, 'edited', c.seq, `${what} ${c.seq}: ${refused}`);
      return false;
    }
    return true;
  }

  private prune(p: Checkpoint): void {
    const expectedFirst = (this.prunes.at(-1)?.lastId ?? 0) + 1;
    if (p.firstId !== expectedFirst) {
      const problem = p.firstId > expectedFirst ? 'missing' : 'inserted';
      this.report(expectedFirst, problem, p.seq, `prune record ${p.seq} starts at row ${p.firstId}`);
    }
    this.prunes.push(p);
    this.prunedThrough = Math.max(this.prunedThrough, p.lastId);
    this.removedThroughSeq = Math.max(this.removedThroughSeq, p.throughSeq ?? 0);
  }

  /** Whether the seal follows its predecessor in the chain; reports it when not. */
  private checkLink(c: Checkpoint): boolean {
    const p = c.seq - 1;
    const firstId = (this.lastSeal?.lastId ?? this.prunedThrough) + 1;
    if (c.seq <= this.removedThroughSeq) {
      this.report(c.firstId, 'inserted', c.seq, `checkpoint ${c.seq} was pruned, yet it is there`);
      return false;
    }
    let expected: string | null = null;
    if (p === 0) expected = GENESIS_HASH;
    else if (this.lastSeal?.seq === p) expected = this.lastSeal.hash;
    else {
      const prune = this.prunes.find((x) => x.seq === p);
      const through = this.prunes.find((x) => x.throughSeq === p);
      expected = prune?.hash ?? through?.root ?? null;
    }
    if (expected === null) {
      this.report(firstId, 'missing', p, `checkpoint ${p} is missing: checkpoint ${c.seq} follows nothing`);
      return false;
    }
    if (c.prevHash !== expected) {
      this.report(c.firstId, 'edited', c.seq, `checkpoint ${c.seq} does not follow checkpoint ${p}`);
      return false;
    }
    return true;
  }

  private checkRange(c: Checkpoint): void {
    const expectedFirst = (this.lastSeal?.lastId ?? this.prunedThrough) + 1;
    if (c.firstId > expectedFirst) {
      const gap = `rows ${expectedFirst}..${c.firstId - 1} are covered by no checkpoint`;
      this.report(expectedFirst, 'missing', c.seq, gap);
    } else if (c.firstId < expectedFirst) {
      this.report(c.firstId, 'inserted', c.seq, `checkpoint ${c.seq} covers rows already sealed`);
    }
  }

  /** The leaves when they match the checkpoint's root and range; null (and a problem) otherwise. */
  private checkLeaves(c: Checkpoint, bytes: Uint8Array): readonly Leaf[] | null {
    const leaves = this.crypto.sha256(bytes) === c.root ? decodeLeaves(bytes) : null;
    const fits =
      leaves !== null &&
      leaves.length === c.rowCount &&
      leaves.every(
        (l, i) => l.id >= c.firstId && l.id <= c.lastId && (i === 0 || l.id > (leaves[i - 1]?.id ?? 0)),
      );
    if (!fits) {
      this.report(
        c.firstId,
        'edited',
        c.seq,
        `checkpoint ${c.seq}'s leaves were altered: they do not match its root`,
      );
      return null;
    }
    return leaves;
  }

  private sealedRow(cur: Current, id: number, columns: Readonly<Record<string, unknown>>): void {
    const { c, leaves } = cur;
    if (id < c.firstId) {
      this.report(id, 'inserted', c.seq, `row ${id} lies before every checkpoint`);
      return;
    }
    if (leaves === null) {
      this.unchecked++;
      return;
    }
    this.missingBefore(cur, id);
    const leaf = leaves[cur.next];
    if (leaf === undefined || leaf.id !== id) {
      this.report(
        id,
        'inserted',
        c.seq,
        `row ${id} was never sealed by checkpoint ${c.seq}, which covers it`,
      );
      return;
    }
    cur.next++;
    const hash = this.crypto.sha256(rowContent(columns));
    if (hash === leaf.hash) return;
    cur.byHash ??= new Map(leaves.map((l) => [l.hash, l.id]));
    const sealedAs = cur.byHash.get(hash);
    if (sealedAs !== undefined && sealedAs !== id) {
      this.report(
        id,
        'reordered',
        c.seq,
        `row ${id} holds what checkpoint ${c.seq} sealed as row ${sealedAs}`,
      );
    } else {
      this.report(id, 'edited', c.seq, `row ${id} differs from what checkpoint ${c.seq} sealed`);
    }
  }

  /** Leaves before `id` whose rows never came: missing, when the stream is complete. */
  private missingBefore(cur: Current, id: number): void {
    const leaves = cur.leaves;
    if (leaves === null) return;
    for (let leaf = leaves[cur.next]; leaf !== undefined && leaf.id < id; leaf = leaves[cur.next]) {
      cur.next++;
      if (this.options.complete) {
        this.report(
          leaf.id,
          'missing',
          cur.c.seq,
          `row ${leaf.id}, sealed by checkpoint ${cur.c.seq}, is gone`,
        );
      }
    }
  }

  private close(): void {
    const cur = this.current;
    if (cur === null) return;
    this.missingBefore(cur, Number.POSITIVE_INFINITY);
    this.current = null;
  }
}
