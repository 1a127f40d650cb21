/**
 * `baton audit verify`: recomputes every hash, signature and link of the ledger, from the database
 * or from an export, and names the first row that differs, is missing, was inserted or moved, with
 * the checkpoint that no longer matches. Pinned keys (an anchor file, --public-key) are the only
 * ones trusted when given; otherwise the source's own keys are, which catches every edit short of
 * a rewrite re-signed with a new key, and that one the anchors catch.
 */
import { KEY_RETIRED } from '../../core/ledger-retirement.js';
import { LedgerVerifier, type LedgerReport } from '../../core/ledger-verify.js';
import type { Store } from '../../store/store.js';
import { anchorKeys, checkAnchors, type Anchor } from './anchor.js';
import type { LedgerEvent, LedgerHeader } from './events.js';
import type { ShownOtherwise } from './export-format.js';
import { ledgerEvents } from './events.js';
import { keyIdOf, ledgerCrypto, type KnownKey } from './keys.js';

export interface VerifyParams {
  /** Raw public keys trusted on their own (--public-key). */
  readonly publicKeys?: readonly string[];
  readonly anchors?: readonly Anchor[];
  /**
   * Check only the rows a filtered export carries (--partial). The file's header says whether it
   * was filtered, but nothing signs the header: without this, a file is held to being whole, so
   * a header edited to say "filtered" cannot hide a deleted row.
   */
  readonly partial?: boolean;
  /**
   * Keys the auditor knows, from outside the database, were retired (--retired): the ledger must
   * still hold a retirement row for each, or a forged prune record could have removed it unseen.
   */
  readonly retired?: readonly string[];
}

export interface VerifyReport extends LedgerReport {
  /** Where the trusted keys came from: `pinned` (anchors, --public-key) or the `source` itself. */
  readonly keys: 'pinned' | 'source';
  readonly keyIds: readonly string[];
  readonly anchorsChecked: number;
  /** The `ledger:continued` row (`baton db copy`): the older ledger this one goes on from; null when none. */
  readonly continues: ContinuedLedger | null;
}

/** Where a ledger moved from: its row's id and what it names (the old ledger's last checkpoint). */
export interface ContinuedLedger {
  readonly id: number;
  readonly from: unknown;
  readonly checkpoint: unknown;
}

function continuedFrom(columns: Readonly<Record<string, unknown>>): ContinuedLedger | null {
  if (columns['type'] !== 'ledger:continued') return null;
  const raw = columns['detail'];
  let detail: Record<string, unknown> | null;
  try {
    detail = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, unknown> | null;
  } catch {
    // An edited detail that is no JSON: the row verifier reports the row; the link says nothing.
    return null;
  }
  return {
    id: Number(columns['id']),
    from: detail?.['from'] ?? null,
    checkpoint: detail?.['checkpoint'] ?? null,
  };
}

function pinnedKeys(params: VerifyParams): KnownKey[] | null {
  const given = (params.publicKeys ?? []).map((publicKey) => ({ id: keyIdOf(publicKey), publicKey }));
  const pinned = [...given, ...anchorKeys(params.anchors ?? [])];
  return pinned.length === 0 ? null : pinned;
}

/** Runs the verifier over a stream of ledger events (the database's, or a file's). */
export async function verifyEvents(
  events: AsyncIterable<LedgerEvent | ShownOtherwise>,
  params: VerifyParams = {},
  onRows?: (count: number) => void,
): Promise<VerifyReport & { readonly header: LedgerHeader | null }> {
  const pinned = pinnedKeys(params);
  let verifier: LedgerVerifier | null = null;
  let header: LedgerHeader | null = null;
  let continues: ContinuedLedger | null = null;
  const ready = (): LedgerVerifier => {
    verifier ??= new LedgerVerifier(ledgerCrypto(header?.keys ?? [], pinned), {
      complete: params.partial !== true,
    });
    return verifier;
  };
  for await (const event of events) {
    if (event.kind === 'header') header = event.header;
    else if (event.kind === 'checkpoint') ready().checkpoint(event.checkpoint, event.leaves);
    else if (event.kind === 'shown-otherwise')
      ready().report(event.id, 'edited', event.checkpoint, event.detail);
    else if (event.kind === 'rows') {
      const rowVerifier = ready();
      for (const columns of event.rows) {
        rowVerifier.row(columns);
        continues ??= continuedFrom(columns);
      }
      onRows?.(event.rows.length);
    }
  }
  const finalVerifier = ready();
  checkAnchors(finalVerifier, params.anchors ?? []);
  checkRetired(finalVerifier, params.retired ?? []);
  const keyIds = (pinned ?? header?.keys ?? []).map((key) => key.id);
  return {
    ...finalVerifier.finish(),
    keys: pinned === null ? 'source' : 'pinned',
    keyIds,
    anchorsChecked: params.anchors?.length ?? 0,
    continues,
    header,
  };
}

/** Reports each key known to be retired that the ledger does not say is (as id 0: no row to name). */
function checkRetired(verifier: LedgerVerifier, retired: readonly string[]): void {
  for (const keyId of retired) {
    if (verifier.retirements.has(keyId)) continue;
    verifier.report(
      0,
      'missing',
      null,
      `key ${keyId} was retired (--retired), yet the ledger holds no ${KEY_RETIRED} row for it: ` +
        'the row was removed (a forged prune record?), or the key was never retired in this ledger',
    );
  }
}

export async function verifyLedger(store: Store, params: VerifyParams = {}): Promise<VerifyReport> {
  const report = await verifyEvents(ledgerEvents(store), params);
  return withoutHeader(report);
}

/** The report alone, without the stream's header. */
export function withoutHeader(report: VerifyReport & { readonly header: LedgerHeader | null }): VerifyReport {
  const copy: Record<string, unknown> = { ...report };
  delete copy['header'];
  return copy as unknown as VerifyReport;
}
