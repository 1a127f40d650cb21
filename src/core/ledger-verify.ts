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
import { Retirements } from './ledger-retirement.js';
import {
  checkpointText,
  hashesOf,
  inRange,
  GENESIS_HASH,
  LeafView,
  rowContent,
  rowId,
  type Checkpoint,
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
  readonly leaves: LeafView | null;
  next: number;
  byHash: Map<string, number> | null;
  /** Whether a seal without leaves was reported already. */
  leavesMissing: boolean;
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
  readonly retirements = new Retirements();
  /** Every checkpoint read, by seq: for the anchors and the prune records' own links. */
  readonly seen = new Map<number, SeenCheckpoint>();

  constructor(
    private readonly crypto: LedgerCrypto,
    private readonly options: VerifyOptions,
  ) {}

  /** A checkpoint, with its leaves when the stream carries them. */
  checkpoint(checkpoint: Checkpoint, leaves: Uint8Array | null): void {
    this.close();
    this.seen.set(checkpoint.seq, { ...checkpoint });
    if (!this.checkSelf(checkpoint)) return this.kindOf(checkpoint);
    if (checkpoint.kind === 'prune') return this.prune(checkpoint);
    if (checkpoint.firstId <= this.lastRowId) {
      this.report(
        checkpoint.firstId,
        'reordered',
        checkpoint.seq,
        `checkpoint ${checkpoint.seq} comes after row ${this.lastRowId}`,
      );
    }
    if (this.checkLink(checkpoint)) this.checkRange(checkpoint);
    this.retiredSigner(checkpoint);
    this.lastSeal = checkpoint;
    this.seals++;
    const checked = leaves === null ? null : this.checkLeaves(checkpoint, leaves);
    // Leaves that failed their check were reported: not again as missing.
    this.current = { c: checkpoint, leaves: checked, next: 0, byHash: null, leavesMissing: leaves !== null };
    // Every seal is written with its leaves (a CHECK on both engines), and a stream carries them
    // with any of its rows: one without them hides what it sealed, so its rows cannot be checked.
    if (leaves === null && this.options.complete) this.noLeaves(this.current);
  }

  /** A seal signed by a key its own ledger retired before (or within) its range. */
  private retiredSigner(checkpoint: Checkpoint): void {
    const why = this.retirements.refuse(checkpoint);
    if (why !== null) this.report(checkpoint.firstId, 'edited', checkpoint.seq, why);
  }

  private noLeaves(cur: Current): void {
    if (cur.leavesMissing) return;
    cur.leavesMissing = true;
    this.report(
      cur.c.firstId,
      'edited',
      cur.c.seq,
      `checkpoint ${cur.c.seq} carries no leaves: a seal always does, so its rows cannot be checked`,
    );
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
    if (this.retirements.note(id, columns) && cur !== null) this.retiredSigner(cur.c);
    if (id <= this.prunedThrough) {
      const by = this.prunes.find((prune) => id >= prune.firstId && id <= prune.lastId) ?? this.prunes.at(-1);
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
    for (const checkpoint of this.prunes) {
      const before = this.seen.get(checkpoint.seq - 1);
      if (before !== undefined && before.hash !== checkpoint.prevHash) {
        this.report(
          checkpoint.firstId,
          'edited',
          checkpoint.seq,
          `prune record ${checkpoint.seq} does not follow checkpoint ${checkpoint.seq - 1}`,
        );
      }
    }
    const problems = [...this.problems].sort((left, right) => left.id - right.id);
    return {
      ok: this.problemCount === 0,
      rows: this.rows,
      seals: this.seals,
      sealedThrough: Math.max(this.lastSeal?.lastId ?? 0, this.prunedThrough),
      unsealed: { ...this.unsealed },
      unchecked: this.unchecked,
      pruned: this.prunes.map((checkpoint) => ({
        checkpoint: checkpoint.seq,
        firstId: checkpoint.firstId,
        lastId: checkpoint.lastId,
        rowCount: checkpoint.rowCount,
        prunedAt: checkpoint.sealedAt,
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
  private kindOf(checkpoint: Checkpoint): void {
    if (checkpoint.kind === 'prune') {
      this.prunes.push(checkpoint);
      this.prunedThrough = Math.max(this.prunedThrough, checkpoint.lastId);
      return;
    }
    this.lastSeal = checkpoint;
    this.seals++;
    // Already reported as bad: its rows are not reported again for its missing leaves.
    this.current = { c: checkpoint, leaves: null, next: 0, byHash: null, leavesMissing: true };
  }

  private checkSelf(checkpoint: Checkpoint): boolean {
    const what = checkpoint.kind === 'prune' ? 'prune record' : 'checkpoint';
    if (this.crypto.sha256(checkpointText(checkpoint)) !== checkpoint.hash) {
      this.report(
        checkpoint.firstId,
        'edited',
        checkpoint.seq,
        `${what} ${checkpoint.seq} was altered: its hash does not match its fields`,
      );
      return false;
    }
    const refused = this.crypto.checkSignature(checkpoint.keyId, checkpoint.hash, checkpoint.signature);
    if (refused !== null) {
      this.report(checkpoint.firstId, 'edited', checkpoint.seq, `${what} ${checkpoint.seq}: ${refused}`);
      return false;
    }
    return true;
  }

  private prune(checkpoint: Checkpoint): void {
    const expectedFirst = (this.prunes.at(-1)?.lastId ?? 0) + 1;
    if (checkpoint.firstId !== expectedFirst) {
      const problem = checkpoint.firstId > expectedFirst ? 'missing' : 'inserted';
      this.report(
        expectedFirst,
        problem,
        checkpoint.seq,
        `prune record ${checkpoint.seq} starts at row ${checkpoint.firstId}`,
      );
    }
    this.prunes.push(checkpoint);
    this.prunedThrough = Math.max(this.prunedThrough, checkpoint.lastId);
    this.removedThroughSeq = Math.max(this.removedThroughSeq, checkpoint.throughSeq ?? 0);
  }

  /** Whether the seal follows its predecessor in the chain; reports it when not. */
  private checkLink(checkpoint: Checkpoint): boolean {
    const previous = checkpoint.seq - 1;
    const firstId = (this.lastSeal?.lastId ?? this.prunedThrough) + 1;
    if (checkpoint.seq <= this.removedThroughSeq) {
      this.report(
        checkpoint.firstId,
        'inserted',
        checkpoint.seq,
        `checkpoint ${checkpoint.seq} was pruned, yet it is there`,
      );
      return false;
    }
    let expected: string | null = null;
    if (previous === 0) expected = GENESIS_HASH;
    else if (this.lastSeal?.seq === previous) expected = this.lastSeal.hash;
    else {
      const prune = this.prunes.find((entry) => entry.seq === previous);
      const through = this.prunes.find((entry) => entry.throughSeq === previous);
      expected = prune?.hash ?? through?.root ?? null;
    }
    if (expected === null) {
      this.report(
        firstId,
        'missing',
        previous,
        `checkpoint ${previous} is missing: checkpoint ${checkpoint.seq} follows nothing`,
      );
      return false;
    }
    if (checkpoint.prevHash !== expected) {
      this.report(
        checkpoint.firstId,
        'edited',
        checkpoint.seq,
        `checkpoint ${checkpoint.seq} does not follow checkpoint ${previous}`,
      );
      return false;
    }
    return true;
  }

  private checkRange(checkpoint: Checkpoint): void {
    const expectedFirst = (this.lastSeal?.lastId ?? this.prunedThrough) + 1;
    if (checkpoint.firstId > expectedFirst) {
      const gap = `rows ${expectedFirst}..${checkpoint.firstId - 1} are covered by no checkpoint`;
      this.report(expectedFirst, 'missing', checkpoint.seq, gap);
    } else if (checkpoint.firstId < expectedFirst) {
      this.report(
        checkpoint.firstId,
        'inserted',
        checkpoint.seq,
        `checkpoint ${checkpoint.seq} covers rows already sealed`,
      );
    }
  }

  /** The leaves when they match the checkpoint's root and range; null (and a problem) otherwise. */
  private checkLeaves(checkpoint: Checkpoint, bytes: Uint8Array): LeafView | null {
    const leaves = this.crypto.sha256(bytes) === checkpoint.root ? LeafView.of(bytes) : null;
    if (leaves === null || leaves.length !== checkpoint.rowCount || !inRange(leaves, checkpoint)) {
      this.report(
        checkpoint.firstId,
        'edited',
        checkpoint.seq,
        `checkpoint ${checkpoint.seq}'s leaves were altered: they do not match its root`,
      );
      return null;
    }
    return leaves;
  }

  private sealedRow(cur: Current, id: number, columns: Readonly<Record<string, unknown>>): void {
    const { c: checkpoint, leaves } = cur;
    if (id < checkpoint.firstId) {
      this.report(id, 'inserted', checkpoint.seq, `row ${id} lies before every checkpoint`);
      return;
    }
    if (leaves === null) {
      this.unchecked++;
      this.noLeaves(cur);
      return;
    }
    this.missingBefore(cur, id);
    if (cur.next >= leaves.length || leaves.id(cur.next) !== id) {
      this.report(
        id,
        'inserted',
        checkpoint.seq,
        `row ${id} was never sealed by checkpoint ${checkpoint.seq}, which covers it`,
      );
      return;
    }
    const hash = this.crypto.sha256(rowContent(columns));
    if (hash === leaves.hash(cur.next++)) return;
    cur.byHash ??= hashesOf(leaves);
    const sealedAs = cur.byHash.get(hash);
    if (sealedAs !== undefined && sealedAs !== id) {
      this.report(
        id,
        'reordered',
        checkpoint.seq,
        `row ${id} holds what checkpoint ${checkpoint.seq} sealed as row ${sealedAs}`,
      );
    } else {
      this.report(
        id,
        'edited',
        checkpoint.seq,
        `row ${id} differs from what checkpoint ${checkpoint.seq} sealed`,
      );
    }
  }

  /** Leaves before `id` whose rows never came: missing, when the stream is complete. */
  private missingBefore(cur: Current, id: number): void {
    const leaves = cur.leaves;
    if (leaves === null) return;
    for (; cur.next < leaves.length && leaves.id(cur.next) < id; cur.next++) {
      if (this.options.complete) {
        const gone = leaves.id(cur.next);
        this.report(gone, 'missing', cur.c.seq, `row ${gone}, sealed by checkpoint ${cur.c.seq}, is gone`);
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
