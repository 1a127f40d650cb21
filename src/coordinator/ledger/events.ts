/**
 * The ledger as one stream of events, in the order the verifier reads (core/ledger-verify.ts):
 * a header, every prune record, each seal checkpoint followed by the rows of its range, then the
 * unsealed rows and an end marker; a filtered stream also carries every key retirement row. Read
 * from the database in pages (constant memory), it is what `baton audit verify` checks and what
 * `baton audit export` writes, so an export verifies offline exactly as the database does.
 */
import { retirementRows } from './retire.js';
import { rowId, type Checkpoint } from '../../core/ledger.js';
import type { Instant } from '../../core/time.js';
import type { LedgerKey, LedgerRowColumns, LedgerRowsParams } from '../../store/ledger-store.js';
import type { Store } from '../../store/store.js';

export interface LedgerFilter {
  readonly key?: string | undefined;
  readonly session?: number | undefined;
  readonly host?: string | undefined;
  readonly type?: string | undefined;
  readonly since?: Instant | undefined;
  readonly until?: Instant | undefined;
}

export interface LedgerHeader {
  readonly format: 'baton-ledger';
  readonly version: 1;
  readonly engine: string;
  readonly exportedAt: Instant;
  readonly keys: readonly LedgerKey[];
  readonly filter: LedgerFilter;
  /** Every row is in the stream: a sealed row that is absent is missing. */
  readonly complete: boolean;
}

export type LedgerEvent =
  | { readonly kind: 'header'; readonly header: LedgerHeader }
  | { readonly kind: 'checkpoint'; readonly checkpoint: Checkpoint; readonly leaves: Uint8Array | null }
  /** Rows in id order, a page at a time (a generator step per row would cost more than the row). */
  | { readonly kind: 'rows'; readonly checkpoint: number | null; readonly rows: readonly LedgerRowColumns[] }
  | { readonly kind: 'end'; readonly rows: number; readonly checkpoints: number };

const PAGE_ROWS = 1000;
const PAGE_CHECKPOINTS = 100;
/** Below every id: the first page starts here, so a forged row with a low id is read too. */
const BEFORE_ALL = Number.MIN_SAFE_INTEGER;

function isFiltered(filter: LedgerFilter): boolean {
  return Object.values(filter).some((value) => value !== undefined);
}

async function* checkpointsOf(store: Store, kind: Checkpoint['kind']): AsyncGenerator<Checkpoint> {
  let afterSeq = 0;
  for (;;) {
    const page = await store.ledger.checkpoints({ afterSeq, limit: PAGE_CHECKPOINTS, kind });
    yield* page;
    const last = page.at(-1);
    if (last === undefined || page.length < PAGE_CHECKPOINTS) return;
    afterSeq = last.seq;
  }
}

/** The page with the retirements of ids in (after, through] that it lacks, in id order. */
function withRetirements(
  page: readonly LedgerRowColumns[],
  retirements: readonly LedgerRowColumns[],
  after: number,
  through: number,
): readonly LedgerRowColumns[] {
  const ids = new Set(page.map(rowId));
  const lacking = retirements.filter(
    (row) => rowId(row) > after && rowId(row) <= through && !ids.has(rowId(row)),
  );
  return lacking.length === 0
    ? page
    : [...page, ...lacking].sort((left, right) => rowId(left) - rowId(right));
}

/** A seal checkpoint's event, with its leaves read from the store when `withLeaves`. */
async function checkpointEvent(
  store: Store,
  checkpoint: Checkpoint,
  withLeaves: boolean,
): Promise<LedgerEvent> {
  const leaves = withLeaves ? await store.ledger.leaves(checkpoint.seq) : null;
  return { kind: 'checkpoint', checkpoint, leaves };
}

export async function* ledgerEvents(store: Store, filter: LedgerFilter = {}): AsyncGenerator<LedgerEvent> {
  const complete = !isFiltered(filter);
  const header: LedgerHeader = {
    format: 'baton-ledger',
    version: 1,
    engine: store.engine,
    exportedAt: await store.now(),
    keys: await store.ledger.keys(),
    filter,
    complete,
  };
  yield { kind: 'header', header };
  let checkpoints = 0;
  let rows = 0;
  for await (const checkpoint of checkpointsOf(store, 'prune')) {
    checkpoints++;
    yield { kind: 'checkpoint', checkpoint: checkpoint, leaves: null };
  }
  let cursor = BEFORE_ALL;
  // A filtered stream carries every key retirement too: the verifier judges each checkpoint's key
  // by the `ledger:key-retired` rows it reads, so without them it would pass a retired key's seal.
  const retirements = isFiltered(filter) ? await retirementRows(store) : [];
  const page = async (throughId?: number): Promise<readonly LedgerRowColumns[]> => {
    const params: LedgerRowsParams = { ...filter, afterId: cursor, limit: PAGE_ROWS };
    const found = await store.ledger.rows(throughId === undefined ? params : { ...params, throughId });
    const read = found.length < PAGE_ROWS ? (throughId ?? Infinity) : rowId(found.at(-1) ?? {});
    return retirements.length === 0 ? found : withRetirements(found, retirements, cursor, read);
  };
  for await (const checkpoint of checkpointsOf(store, 'seal')) {
    checkpoints++;
    let batch = await page(checkpoint.lastId);
    // A filtered export carries a checkpoint's leaves only when it carries some of its rows. They
    // are in no variable here: one would hold them (320 KB) while the checkpoint's rows stream.
    yield await checkpointEvent(store, checkpoint, complete || batch.length > 0);
    for (;;) {
      if (batch.length > 0) yield { kind: 'rows', checkpoint: checkpoint.seq, rows: batch };
      rows += batch.length;
      if (batch.length < PAGE_ROWS) break;
      cursor = Number(batch.at(-1)?.['id']);
      batch = await page(checkpoint.lastId);
    }
    cursor = Math.max(cursor, checkpoint.lastId);
  }
  for (;;) {
    const batch = await page();
    if (batch.length > 0) yield { kind: 'rows', checkpoint: null, rows: batch };
    rows += batch.length;
    if (batch.length < PAGE_ROWS) break;
    cursor = Number(batch.at(-1)?.['id']);
  }
  yield { kind: 'end', rows, checkpoints };
}
