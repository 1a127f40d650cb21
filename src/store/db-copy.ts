/**
 * `baton db copy`'s reach into the engines: the SQLite file it reads (sqlite/copy-source.ts) and the
 * PostgreSQL database it fills in one transaction (postgres/copy-target.ts), each loaded only when
 * the command runs, as roles.ts loads the PostgreSQL one, so adapters never import an engine.
 */
import type { Instant } from '../core/time.js';

/** What makes a backlog not quiescent: work in flight that a copy would freeze mid-way. */
export interface QuiescenceFacts {
  readonly liveSessions: readonly { readonly id: number; readonly kind: string; readonly host: string }[];
  readonly activeJobs: readonly number[];
  readonly heldTasks: readonly string[];
  readonly heldWorkspaces: readonly string[];
  readonly ledgerRows: number;
}

/** The source ledger's newest checkpoint, as its row says (times in ms). */
export interface LastCheckpoint {
  readonly seq: number;
  readonly kind: string;
  readonly firstId: number;
  readonly lastId: number;
  readonly hash: string;
  readonly keyId: string;
  readonly publicKey: string | null;
  readonly sealedAt: Instant;
}

/** The SQLite file, read in one snapshot under its write lock until markMoved() or close(). */
export interface CopySource {
  quiescence(): QuiescenceFacts;
  lastCheckpoint(): LastCheckpoint | null;
  count(table: string): number;
  /** The highest id the table ever gave out (ids of removed rows too), so PostgreSQL continues past it. */
  maxId(table: string): number;
  /** Every row of a copied table, a page at a time, in its key's order. */
  pages(table: string): Iterable<Record<string, unknown>[]>;
  /** Writes the "moved to …" mark and commits, letting the write lock go (after PostgreSQL's commit). */
  markMoved(value: string): void;
  /** Lets the write lock go; without markMoved nothing was written. */
  close(): void;
}

/** The PostgreSQL database before the copy: whether it has Baton's tables, and which hold rows. */
export interface TargetState {
  readonly batonTables: boolean;
  /** Tables in its schema that are not Baton's (a database used for something else). */
  readonly otherTables: readonly string[];
  /** Copied tables (and the ledger's) already holding rows, with their counts. */
  readonly nonEmpty: Readonly<Record<string, number>>;
  /** The role the URL logs in as, its current schema, and whether it may create tables there. */
  readonly role: string;
  readonly schema: string;
  readonly canCreate: boolean;
}

export interface CopyResult {
  /** Rows written per table. */
  readonly tables: Readonly<Record<string, number>>;
  /** The id of the `ledger:continued` row. */
  readonly linkId: number;
}

export async function openCopySource(path: string): Promise<CopySource> {
  const { openCopySource: open } = await import('./sqlite/copy-source.js');
  return open(path);
}

export async function readTargetState(url: string): Promise<TargetState> {
  const { readTargetState: read } = await import('./postgres/copy-target.js');
  return read(url);
}

/**
 * Copies every table of copy-plan.ts into `url` (migrated, empty) in one transaction, then appends
 * the `ledger:continued` row with `link` as its detail; all or nothing.
 */
export async function copyIntoPostgres(
  url: string,
  source: CopySource,
  link: Readonly<Record<string, unknown>>,
): Promise<CopyResult> {
  const { copyIntoPostgres: copy } = await import('./postgres/copy-target.js');
  return copy(url, source, link);
}
