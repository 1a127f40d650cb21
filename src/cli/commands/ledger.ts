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
import { stateDir, withCoordinator, type GlobalOptions } from '../run.js';
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
    .option(
      '--rotate',
      'add a new key although the ledger has one (new checkpoints are signed with it; ' +
        'a key that leaked is then retired: `baton ledger retire <old key id>`)',
    )
    .action((options: InitOptions, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const path = keyFilePath(options.keyFile, stateDir(cmd.optsWithGlobals<GlobalOptions>()));
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
  registerKey(ledger);
}

/** `baton ledger retire <key-id>`: a key that leaked signs nothing from its retirement on. */
function registerRetire(ledger: Command): void {
  ledger
    .command('retire')
    .argument('<key-id>', 'the key to retire, as `baton ledger key` prints it (16 hex digits)')
    .description(
      'retire a key that leaked: no sealer signs with it again, and verify fails what it signs after',
    )
    .addHelpText(
      'after',
      [
        '',
        'Writes a ledger:key-retired row naming the key, sealed by the next checkpoint like any row. From that',
        'row on, `baton up`, `baton audit seal` and `audit prune` refuse to sign with the key, and',
        '`baton audit verify` (database or --file) fails a checkpoint it signed that covers or follows the row;',
        'what it signed before keeps verifying. Add the new key first (`baton ledger init --rotate --key-file F`)',
        'and give its file to the hosts that seal: the last key that is not retired is refused.',
        'Exit 4: no such key. Exit 3: retired already, or the last key not retired. Not over the HTTP API.',
      ].join('\n'),
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

/** `baton ledger key`: the registered keys, which are retired, and the local key file. */
function registerKey(ledger: Command): void {
  ledger
    .command('key')
    .description(
      'print the public keys the ledger is signed with (and which are retired), and the local key file',
    )
    .option('--key-file <path>', KEY_FILE_HELP)
    .action((options: InitOptions, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const path = keyFilePath(options.keyFile, stateDir(cmd.optsWithGlobals<GlobalOptions>()));
        const local = existsSync(path) ? loadKeyFile(path) : null;
        const retired = await baton.ledger.retirements();
        const keys = (await baton.ledger.keys()).map((key) => ({
          ...key,
          publicKey: `ed25519:${key.publicKey}`,
          retiredByRow: retired.get(key.id) ?? null,
        }));
        const file =
          local === null ? null : { path, keyId: local.keyId, publicKey: `ed25519:${local.publicKey}` };
        out.result({ keys, keyFile: file }, () => [
          ...(keys.length === 0
            ? ['no ledger key: run `baton ledger init`']
            : keys.map(
                (key) =>
                  `${key.id}  ${key.publicKey}` +
                  (key.retiredByRow === null
                    ? ''
                    : `  retired (row ${key.retiredByRow}, ledger:key-retired)`),
              )),
          file === null ? `no key file at ${path}` : `key file ${path}: key ${file.keyId}`,
        ]);
      }),
    );
}
