/**
 * Key retirement as the ledger itself records it: a `ledger:key-retired` row names the key, and
 * from that row on the key signs nothing. The row is sealed like any other (its checkpoint, the
 * chain, the anchors), so the verifier judges a checkpoint's key from the rows it reads, never
 * from a column an owner of the database could clear. Pure: the row's columns come in as read.
 */
import { ConflictError, NotFoundError } from './errors.js';
import { JsonText, type Checkpoint } from './ledger.js';

export const KEY_RETIRED = 'ledger:key-retired';

/**
 * The key a ledger row retires; null for any other row. `detail` as SQLite stores it (text), as
 * PostgreSQL parses jsonb (an object), or as the sealer's read keeps it (JsonText).
 */
export function retiredKeyOf(columns: Readonly<Record<string, unknown>>): string | null {
  if (columns['type'] !== KEY_RETIRED) return null;
  let detail = columns['detail'];
  if (detail instanceof JsonText) detail = detail.text;
  if (typeof detail === 'string') {
    try {
      detail = JSON.parse(detail) as unknown;
    } catch {
      return null;
    }
  }
  const keyId = typeof detail === 'object' && detail !== null ? (detail as { keyId?: unknown }).keyId : null;
  return typeof keyId === 'string' ? keyId : null;
}

/** The retirements read so far, each key's first `ledger:key-retired` row. */
export class Retirements {
  private readonly rowOf = new Map<string, number>();

  /** Notes a row read in id order; true when it retires a key. */
  note(id: number, columns: Readonly<Record<string, unknown>>): boolean {
    const keyId = retiredKeyOf(columns);
    if (keyId === null) return false;
    if (!this.rowOf.has(keyId)) this.rowOf.set(keyId, id);
    return true;
  }

  /** Whether a row read so far retires the key. */
  has(keyId: string): boolean {
    return this.rowOf.has(keyId);
  }

  /**
   * Why a seal fails for its key's retirement: it covers the retirement row or rows after it, so
   * it was signed after the key was retired. Null when it does not.
   */
  refuse(checkpoint: Checkpoint): string | null {
    const retiredAt = this.rowOf.get(checkpoint.keyId);
    if (retiredAt === undefined || checkpoint.lastId < retiredAt) return null;
    return (
      `checkpoint ${checkpoint.seq} (rows ${checkpoint.firstId}..${checkpoint.lastId}) is signed by key ` +
      `${checkpoint.keyId}, which row ${retiredAt} (${KEY_RETIRED}) retired: a retired key signs nothing ` +
      'that covers or follows its retirement'
    );
  }
}

/**
 * Why `id` cannot be retired, given the registered keys and those retired already: it is unknown,
 * retired already, or the last key left to seal with. Null when it can be.
 */
export function retirementRefusal(
  id: string,
  registered: readonly string[],
  retired: ReadonlySet<string>,
): NotFoundError | ConflictError | null {
  if (!registered.includes(id)) return new NotFoundError('ledger key', id);
  if (retired.has(id)) {
    return new ConflictError(`ledger key ${id} is retired already`, 'list the keys with `baton ledger key`');
  }
  if (!registered.some((other) => other !== id && !retired.has(other))) {
    return new ConflictError(
      `ledger key ${id} is the last key that is not retired: nothing could seal the ledger without it`,
      'add a key first with `baton ledger init --rotate --key-file <new file>`, then retire this one',
    );
  }
  return null;
}

/**
 * The retirements a prune through `lastId` would remove with no later row left to say so: one
 * `{ keyId, restates }` per key (its first row), for the prune to write again after the range it
 * removes, so that verify and the signers still see the key retired. `rows`: every retirement row.
 */
export function retirementsToRestate(
  rows: readonly Readonly<Record<string, unknown>>[],
  lastId: number,
): { readonly keyId: string; readonly restates: number }[] {
  const first = new Map<string, number>();
  const kept = new Set<string>();
  for (const row of rows) {
    const keyId = retiredKeyOf(row);
    const id = Number(row['id']);
    if (keyId === null) continue;
    if (id > lastId) kept.add(keyId);
    else if (!first.has(keyId) || id < (first.get(keyId) ?? id)) first.set(keyId, id);
  }
  return [...first].filter(([keyId]) => !kept.has(keyId)).map(([keyId, restates]) => ({ keyId, restates }));
}
