/**
 * `baton doctor`'s question to the sealer's own guard: does the database still hold the checkpoint
 * this host's key sealed last in it (sealed-record.ts)? After a restore from a backup it does not,
 * and every `baton up` with the key refuses to seal each round (seal.ts assertStillHolds), while
 * the ledger's window alone looked fine until the oldest unsealed row had waited long enough.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConflictError, InvalidInputError } from '../../core/errors.js';
import { check, type DoctorCheck } from '../../core/doctor.js';
import type { Store } from '../../store/store.js';
import { loadKeyFile } from './keys.js';
import { assertStillHolds } from './seal.js';
import { SealedRecord } from './sealed-record.js';

/**
 * A failed `ledger` check when the key here sealed a checkpoint in this database (`database`, as
 * the operator names it) that the database no longer holds, or whose record of it cannot be read or
 * parsed (the sealer refuses to seal then too); null when it holds it, when the key has no record
 * for it, or when the key cannot be read (the key's own check says why).
 */
export async function sealingRefused(
  store: Store,
  keyFile: string,
  database: string,
): Promise<DoctorCheck | null> {
  if (!existsSync(keyFile)) return null;
  const record = SealedRecord.of(keyFile, database);
  let known;
  try {
    known = record.known(); // null when there is none; a record that cannot be read or parsed throws
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    return check('ledger', 'fail', error.message, error.hint ?? 'move the record aside');
  }
  if (known === null) return null;
  let signer;
  try {
    signer = loadKeyFile(keyFile);
  } catch {
    return null; // the key check says what is wrong with it
  }
  try {
    await assertStillHolds(store, known, signer);
    return null;
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    const aside = join(dirname(dirname(record.path)), 'replaced', 'sealed');
    return check(
      'ledger',
      'fail',
      `${error.message}, by any baton up with this key`,
      'after a restore from a backup, move the record aside (docs/operations.md#restore-a-backup, step 4): ' +
        `mkdir -p ${aside} && mv ${record.path} ${aside}/; ` +
        'otherwise find out what happened with `baton audit verify`',
    );
  }
}
