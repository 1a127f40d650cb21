/**
 * `baton ledger init | key | retire`: the Ed25519 key that signs the ledger's checkpoints. The
 * private key lives in a file (default .baton/ledger.key, or --key-file, or BATON_LEDGER_KEY), mode
 * 0600; the public key is registered in the database and printed, for an auditor to pin. A key that
 * leaked is rotated (`init --rotate`), then retired: from its `ledger:key-retired` row on, no sealer
 * signs with it and `baton audit verify` fails a checkpoint it signed.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { ConflictError } from '../../core/errors.js';
import { createKeyFile, keyFilePath, loadKeyFile, type LedgerSigner } from '../../coordinator/ledger/keys.js';
import { withCoordinator } from '../run.js';
import { cliActor } from './lifecycle.js';

interface InitOptions {
  readonly keyFile?: string;
  readonly rotate?: boolean;
}

export const KEY_FILE_HELP = 'the private key file (default $BATON_LEDGER_KEY, else .baton/ledger.key)';

export function registerLedger(program: Command): void {
  const ledger = program.command('ledger').description("the key that signs the ledger's checkpoints");
  ledger
    .command('init')
    .description('make the signing key: private half to a 0600 file, public half into the database')
    .option('--key-file <path>', KEY_FILE_HELP)
    .option('--rotate', 'add a new key although the ledger has one (new checkpoints are signed with it)')
    .action((options: InitOptions, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const path = keyFilePath(options.keyFile);
        const registered = await baton.ledger.keys();
        const existing = existsSync(path) ? loadKeyFile(path) : null;
        const known = existing !== null && registered.some((key) => key.id === existing.keyId);
        if (!known && registered.length > 0 && options.rotate !== true) {
          throw new ConflictError(
            `the ledger already has a key (${registered.map((key) => key.id).join(', ')}), and ${path} is not it`,
            'pass --key-file with the key that was registered, or --rotate to add a new one',
          );
        }
        const signer: LedgerSigner = existing ?? createKeyFile(path);
        if (!known) await baton.ledger.addKey(signer, cliActor());
        const result = {
          keyId: signer.keyId,
          publicKey: `ed25519:${signer.publicKey}`,
          keyFile: path,
          created: existing === null,
          registered: !known,
        };
        out.result(result, () => [
          known
            ? `the ledger is initialised already with key ${signer.keyId} (${path})`
            : `ledger key ${signer.keyId}: private key in ${path} (mode 0600: keep it with the user running baton up)`,
          `public key: ${result.publicKey}`,
          'give the public key to your auditor: baton audit verify --public-key <it>',
        ]);
      }),
    );
  registerRetire(ledger);
  ledger
    .command('key')
    .description('print the public keys the ledger is signed with, and the local key file')
    .option('--key-file <path>', KEY_FILE_HELP)
    .action((options: InitOptions, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const path = keyFilePath(options.keyFile);
        const local = existsSync(path) ? loadKeyFile(path) : null;
        const keys = (await baton.ledger.keys()).map((key) => ({
          ...key,
          publicKey: `ed25519:${key.publicKey}`,
        }));
        const file =
          local === null ? null : { path, keyId: local.keyId, publicKey: `ed25519:${local.publicKey}` };
        out.result({ keys, keyFile: file }, () => [
          ...(keys.length === 0
            ? ['no ledger key: run `baton ledger init`']
            : keys.map((key) => `${key.id}  ${key.publicKey}`)),
          file === null ? `no key file at ${path}` : `key file ${path}: key ${file.keyId}`,
        ]);
      }),
    );
}

/** `baton ledger retire <key-id>`: a key that leaked signs nothing from its retirement on. */
function registerRetire(ledger: Command): void {
  ledger
    .command('retire')
    .argument('<key-id>', 'the key to retire, as `baton ledger key` prints it (16 hex digits)')
    .description(
      'retire a key (one that leaked): a ledger:key-retired row, sealed like any; from it on no sealer signs ' +
        'with the key and audit verify fails a checkpoint it signed. Rotate first: the last key is refused. ' +
        'Exit 4: unknown key; 3: retired already, or the last key not retired',
    )
    .action((keyId: string, _options: unknown, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const retired = await baton.ledger.retireKey(keyId, cliActor());
        out.result(retired, () => [
          `ledger key ${retired.keyId} retired (row ${retired.row}, ledger:key-retired): no sealer signs with it ` +
            'from now on, and audit verify fails a checkpoint it signs after this row',
        ]);
      }),
    );
}
