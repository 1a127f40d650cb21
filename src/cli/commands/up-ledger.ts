/** `baton up`'s ledger flags: the sealer's key, interval and anchor file, and the key's record. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { checkAnchorFile } from '../../coordinator/ledger/anchor.js';
import { keyFilePath, loadKeyFile, type LedgerSigner } from '../../coordinator/ledger/keys.js';
import { keyRetirements } from '../../coordinator/ledger/retire.js';
import { SealedRecord } from '../../coordinator/ledger/sealed-record.js';
import { RETIRED_KEY_FIX } from '../../core/doctor.js';
import { InvalidInputError } from '../../core/errors.js';
import type { UpOptions } from '../../daemon/up.js';
import type { Store } from '../../store/store.js';

interface LedgerFlags {
  readonly ledgerKey?: string;
  readonly sealInterval?: string;
  readonly ledgerAnchor?: string;
}

/**
 * The sealer's key: --ledger-key must exist; the default key file is used when it is there.
 * `database` is the database as the operator named it (its record beside the key), `stateDir`
 * the `.baton/` whose ledger.key is the default;
 * `intervalMs` parses --seal-interval, once there is a key to seal with.
 */
export function ledgerOptions(
  flags: LedgerFlags,
  database: string,
  stateDir: string,
  intervalMs: () => number,
): NonNullable<UpOptions['ledger']> | null {
  const path = keyFilePath(flags.ledgerKey, stateDir);
  const named = flags.ledgerKey !== undefined || (process.env['BATON_LEDGER_KEY'] ?? '') !== '';
  if (!named && !existsSync(path)) {
    const given = { '--seal-interval': flags.sealInterval, '--ledger-anchor': flags.ledgerAnchor };
    const flag = Object.keys(given).find((name) => given[name as keyof typeof given] !== undefined);
    if (flag === undefined) return null;
    throw new InvalidInputError(
      `${flag} is a setting of the ledger's sealer, and there is no ledger key (${path})`,
      `run \`baton ledger init\` to make one, pass --ledger-key <file>, or leave ${flag} out`,
    );
  }
  if (flags.ledgerAnchor !== undefined) checkAnchorFile(flags.ledgerAnchor, '--ledger-anchor');
  return {
    signer: loadKeyFile(path),
    intervalMs: intervalMs(),
    anchorFile: flags.ledgerAnchor === undefined ? null : resolve(flags.ledgerAnchor),
    record: SealedRecord.of(path, database),
  };
}

/** `baton up`'s start line on sealing with this key: not, and what to do, when the ledger retired it. */
export async function sealingLine(store: Store, signer: LedgerSigner): Promise<string> {
  const row = (await keyRetirements(store)).get(signer.keyId);
  if (row === undefined) return `sealing the ledger with key ${signer.keyId}`;
  return (
    `not sealing the ledger: its key ${signer.keyId} was retired (row ${row}) and signs nothing more — ` +
    RETIRED_KEY_FIX
  );
}

/**
 * Why a `baton up` does not seal. With a key registered in the database (`baton ledger init` ran
 * on another host) and no key file here, a leader would leave the ledger unsealed without a word
 * more than "no key": say which key, where its file should be, and how to put it there.
 */
export async function notSealingLine(store: Store, flags: LedgerFlags, stateDir: string): Promise<string> {
  const keys = await store.ledger.keys();
  const key = keys[keys.length - 1];
  if (key === undefined) return 'not sealing the ledger (no key)';
  // The project's .baton/, where ledgerOptions looked: from a subdirectory it is not the cwd's.
  const path = keyFilePath(flags.ledgerKey, stateDir);
  return (
    `not sealing the ledger: the database has key ${key.id} registered and this host has no key file ` +
    `(${path}); copy that file from the host where \`baton ledger init\` ran to this path (mode 0600) ` +
    'on every host that can lead, then restart baton up'
  );
}
