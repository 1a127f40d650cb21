/**
 * The ledger's tamper evidence and reports, in storage terms (core/ledger.ts has the model). The
 * store never hashes or signs: it hands out settled rows, keeps checkpoints append-only, and
 * removes pruned ranges in one step with their prune record. Rows are read generically, every
 * column by name, so a column added to audit_events later is covered without a change here.
 */
import type { Checkpoint, CheckpointKind } from '../core/ledger.js';
import type { SessionId } from '../core/session.js';
import type { SessionReport, SessionReportParams } from '../core/session-report.js';
import type { Instant } from '../core/time.js';

/** A ledger row's columns by name, as the engine reads them with `SELECT *` (PostgreSQL: times as text). */
export type LedgerRowColumns = Readonly<Record<string, unknown>>;

export interface LedgerKey {
  /** The key's fingerprint: the first 16 hex digits of sha256 of its raw 32 bytes. */
  readonly id: string;
  /** The raw Ed25519 public key, base64. */
  readonly publicKey: string;
  readonly addedAt: Instant;
}

export interface KeyRetirement {
  readonly keyId: string;
  /** The `ledger:key-retired` row's id. */
  readonly row: number;
  readonly at: Instant;
}

export interface LedgerUnsealed {
  /** The checkpoint with the highest seq (a seal or a prune record), or null. */
  readonly newest: Checkpoint | null;
  /** The highest id any checkpoint covers; 0 when none. */
  readonly sealedThrough: number;
  /**
   * Settled rows after sealedThrough, oldest first. For the sealer only: PostgreSQL hands json and
   * jsonb columns out as JsonText (core/ledger.ts), unparsed, which hashes as the parsed value.
   */
  readonly rows: readonly LedgerRowColumns[];
  /** The database clock after the rows settled. */
  readonly now: Instant;
}

export interface LedgerRowsParams {
  /** Rows with id greater than this, oldest first. */
  readonly afterId: number;
  /** And at most this. */
  readonly throughId?: number | undefined;
  readonly limit: number;
  readonly key?: string | undefined;
  readonly session?: SessionId | undefined;
  readonly host?: string | undefined;
  readonly type?: string | undefined;
  /** `at` in [since, until). */
  readonly since?: Instant | undefined;
  readonly until?: Instant | undefined;
}

export interface LedgerStore {
  readonly ledger: {
    /**
     * Registers a public key and writes `ledger:key-added` (`by`: the actor, who asked, in
     * words); ConflictError when the id exists.
     */
    addKey(params: {
      readonly id: string;
      readonly publicKey: string;
      readonly actor?: string | undefined;
    }): Promise<LedgerKey>;
    /**
     * Retires a registered key: writes `ledger:key-retired` (its id, and who asked) and nothing
     * else, so the retirement is sealed like any row (core/ledger-retirement.ts). NotFoundError for
     * an unknown key; ConflictError when it is retired already or the last key not retired.
     */
    retireKey(params: { readonly id: string; readonly actor?: string | undefined }): Promise<KeyRetirement>;
    /** Every key ever registered, oldest first. */
    keys(): Promise<readonly LedgerKey[]>;
    /**
     * Up to `limit` rows after the newest checkpoint that are settled: no transaction still in
     * flight can commit a row with a smaller id. PostgreSQL waits (at most settleTimeoutMs, then
     * answers with no rows) for the transactions that were writing the ledger when it looked;
     * SQLite's single writer commits ids in order, so every row it sees is settled.
     */
    unsealed(params: { readonly limit: number; readonly settleTimeoutMs?: number }): Promise<LedgerUnsealed>;
    /**
     * Appends a checkpoint (with its leaves, for a seal) if its seq follows the newest one and its
     * prevHash is that one's hash; false, and nothing written, when another sealer got there first.
     */
    append(checkpoint: Checkpoint, leaves: Uint8Array | null): Promise<boolean>;
    /** Checkpoints with seq greater than afterSeq, in seq order, without their leaves. */
    checkpoints(params: {
      readonly afterSeq: number;
      readonly limit: number;
      readonly kind?: CheckpointKind;
    }): Promise<readonly Checkpoint[]>;
    /** A seal checkpoint's leaves; null for a prune record or an unknown seq. */
    leaves(seq: number): Promise<Uint8Array | null>;
    /** Rows by id with every column, filtered as given. */
    rows(params: LedgerRowsParams): Promise<readonly LedgerRowColumns[]>;
    /** The newest `at` of the rows with ids in [firstId, lastId]; null when there are none. */
    newestAt(firstId: number, lastId: number): Promise<Instant | null>;
    /** The ledger's lowest and highest ids (two index lookups, no count: for a progress bar). */
    extent(): Promise<{
      readonly firstId: number | null;
      readonly lastId: number | null;
    }>;
    /**
     * In one step: removes the rows with ids up to the record's lastId and the seal checkpoints
     * up to its throughSeq, appends the prune record, and writes `ledger:pruned`, then again each
     * `ledger:key-retired` it removed that no later row restates (`restates`: the old row's id),
     * so a key stays retired after its row is pruned (core/ledger-retirement.ts). Only when the
     * record follows the newest checkpoint and attests checkpoint throughSeq's hash (its root);
     * otherwise null and nothing changes. Returns how many rows were removed.
     */
    prune(record: Checkpoint): Promise<{ readonly removed: number } | null>;
  };

  readonly reports: {
    /** One row per session (the `session_report` view), oldest first. */
    sessions(params?: SessionReportParams): Promise<readonly SessionReport[]>;
  };
}
