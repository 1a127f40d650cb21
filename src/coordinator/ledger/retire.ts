/**
 * Retired keys, for the signers: a key its ledger retired (`baton ledger retire`, a
 * `ledger:key-retired` row) signs nothing more. The sealers read the retirements from the ledger's
 * rows, as the verifier does (core/ledger-retirement.ts), before their first seal, and watch the
 * rows they seal for a retirement of their own key written since.
 */
import { ConflictError } from '../../core/errors.js';
import { KEY_RETIRED, retiredKeyOf } from '../../core/ledger-retirement.js';
import { rowId } from '../../core/ledger.js';
import type { LedgerKey, LedgerRowColumns } from '../../store/ledger-store.js';
import type { Store } from '../../store/store.js';
import { existsSync } from 'node:fs';
import { loadKeyFile, type LedgerSigner } from './keys.js';

const PAGE = 1000;

/** The refusal of a signer whose key was retired; kept by `baton up`'s sealer, which then never signs. */
export class KeyRetiredError extends ConflictError {}

/**
 * Every `ledger:key-retired` row, in id order, read a page at a time (rows of that type: without
 * an index on `type`, a scan of the ledger; once per signer start, and per filtered export).
 */
export async function retirementRows(store: Store): Promise<LedgerRowColumns[]> {
  const found: LedgerRowColumns[] = [];
  for (let afterId = Number.MIN_SAFE_INTEGER; ;) {
    const page = await store.ledger.rows({ afterId, limit: PAGE, type: KEY_RETIRED });
    found.push(...page);
    if (page.length < PAGE) return found;
    afterId = rowId(page.at(-1) ?? {});
  }
}

/** Each retired key's first `ledger:key-retired` row. */
export async function keyRetirements(store: Store): Promise<Map<string, number>> {
  const retired = new Map<string, number>();
  for (const row of await retirementRows(store)) {
    const keyId = retiredKeyOf(row);
    if (keyId !== null && !retired.has(keyId)) retired.set(keyId, rowId(row));
  }
  return retired;
}

/** The retirement of the key in this file; null without a readable key file or a retirement. */
export async function keyFileRetirement(
  store: Store,
  keyFile: string,
): Promise<{ readonly keyId: string; readonly row: number } | null> {
  if (!existsSync(keyFile)) return null;
  let keyId: string;
  try {
    keyId = loadKeyFile(keyFile).keyId;
  } catch {
    return null; // the key's own check says what is wrong with it
  }
  const row = (await keyRetirements(store)).get(keyId);
  return row === undefined ? null : { keyId, row };
}

function retiredRefusal(signer: LedgerSigner, row: number, usable: readonly string[]): KeyRetiredError {
  const instead =
    usable.length === 0
      ? 'no key is left unretired'
      : `seal with ${usable.length > 1 ? 'one of ' : ''}${usable.join(', ')}`;
  return new KeyRetiredError(
    `the ledger key ${signer.keyId} was retired (row ${row}, ${KEY_RETIRED}): it signs nothing more; ${instead}`,
    'pass the key file of a key that is not retired (--key-file, --ledger-key or BATON_LEDGER_KEY); ' +
      '`baton ledger key` lists the keys',
  );
}

/** Refuses a signer whose key the ledger retired; `keys`: the registered keys, to name the others. */
export async function assertNotRetired(
  store: Store,
  signer: LedgerSigner,
  keys: readonly LedgerKey[],
): Promise<void> {
  const retired = await keyRetirements(store);
  const row = retired.get(signer.keyId);
  if (row === undefined) return;
  const usable = keys.map((key) => key.id).filter((id) => !retired.has(id));
  throw retiredRefusal(signer, row, usable);
}

/** Refuses to sign rows among which the signer's own key is retired (written since its start). */
export async function assertNotRetiredIn(
  store: Store,
  signer: LedgerSigner,
  rows: readonly LedgerRowColumns[],
): Promise<void> {
  const found = rows.find((row) => retiredKeyOf(row) === signer.keyId);
  if (found === undefined) return;
  await assertNotRetired(store, signer, await store.ledger.keys());
  // The row is there, yet the ledger's own read did not find it: refuse all the same.
  throw retiredRefusal(signer, Number(found['id']), []);
}
