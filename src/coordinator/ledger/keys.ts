/**
 * The ledger's Ed25519 key. `baton ledger init` makes one: the private key goes to a file only its
 * owner may read (PKCS#8 PEM, mode 0600, in a 0700 directory), never to the database; the public
 * key is registered in the database and printed, so an auditor can pin it. Whoever can read the
 * file can sign checkpoints: keep it with the OS user that runs `baton up` (and `baton audit seal`
 * or `prune`), on the hosts that may lead. Anyone with the database alone cannot forge a seal.
 */
import type { KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { keepOutOfGit } from '../../os/state-ignore.js';
import { basename, dirname, join, resolve } from 'node:path';
import { ConflictError, InvalidInputError } from '../../core/errors.js';
import type { LedgerCrypto } from '../../core/ledger-verify.js';
import { nodeCrypto } from '../../os/node-crypto.js';

/** Where `baton ledger init` writes the private key, and where the sealers look for it. */
const KEY_FILE = 'ledger.key';

/** Signs checkpoint hashes with the ledger's private key. */
export interface LedgerSigner {
  readonly keyId: string;
  /** The raw 32-byte public key, base64. */
  readonly publicKey: string;
  /** Ed25519 over the 32 bytes of a hex sha256, base64. */
  sign(hashHex: string): string;
}

/**
 * sha256, hex. crypto.hash (Node 20.12 and later) hashes in one call, without the Hash
 * object createHash builds: the sealer and the verifier take one per ledger row (token-cache.ts).
 */
export function sha256Hex(data: string | Uint8Array): string {
  const crypto = nodeCrypto();
  return typeof crypto.hash === 'function'
    ? crypto.hash('sha256', data, 'hex')
    : crypto.createHash('sha256').update(data).digest('hex');
}

/** The key's id: the first 16 hex digits of sha256 of its raw bytes. */
export function keyIdOf(publicKey: string): string {
  return sha256Hex(Buffer.from(publicKey, 'base64')).slice(0, 16);
}

function rawPublicKey(key: KeyObject): string {
  const publicPart = key.export({ format: 'jwk' }).x;
  if (typeof publicPart !== 'string') throw new Error('invariant broken: an Ed25519 key has a public part');
  return Buffer.from(publicPart, 'base64url').toString('base64');
}

function signerOf(privateKey: KeyObject): LedgerSigner {
  const publicKey = rawPublicKey(nodeCrypto().createPublicKey(privateKey));
  return {
    keyId: keyIdOf(publicKey),
    publicKey,
    sign: (hashHex) => nodeCrypto().sign(null, Buffer.from(hashHex, 'hex'), privateKey).toString('base64'),
  };
}

/**
 * The key file named, else BATON_LEDGER_KEY, else ledger.key in `stateDir` (the project's
 * `.baton/`), as an absolute path.
 */
export function keyFilePath(
  given: string | undefined,
  stateDir: string = resolve('.baton'),
  env: NodeJS.ProcessEnv = process.env,
): string {
  const fromEnv = env['BATON_LEDGER_KEY'];
  return resolve(given ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(stateDir, KEY_FILE)));
}

/** Makes a key and writes its private half to `path` (0600); refuses to overwrite a file. */
export function createKeyFile(path: string): LedgerSigner {
  if (existsSync(path)) {
    throw new ConflictError(
      `${path} exists already`,
      'use it, or pass --key-file to write a new key elsewhere',
    );
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  keepOutOfGit(dirname(path));
  const privateKey = newEd25519Key();
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' });
  writeFileSync(path, pem, { mode: 0o600, flag: 'wx' });
  return signerOf(privateKey);
}

/** PKCS#8's DER for an Ed25519 private key up to its 32-byte seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * A new Ed25519 private key from 32 random bytes, its seed. Not generateKeyPairSync: on Node 20 its
 * key-generation job, left to the garbage collector, can be collected during a later export of the
 * same key, whose lock its destructor then waits for: `baton ledger init` hung for good (seen three
 * times in one CI run, the main thread in ~KeyGenJob under ExportJWKEdKey). A key from its seed has no job.
 */
function newEd25519Key(): KeyObject {
  const crypto = nodeCrypto();
  const der = Buffer.concat([ED25519_PKCS8_PREFIX, crypto.randomBytes(32)]);
  return crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

/** The signer in a key file; InvalidInputError when it is missing or not an Ed25519 private key. */
export function loadKeyFile(path: string): LedgerSigner {
  let key: KeyObject;
  try {
    key = nodeCrypto().createPrivateKey(readFileSync(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new InvalidInputError(
        `the ledger key file ${path} does not exist`,
        'run `baton ledger init`, or pass --key-file (or BATON_LEDGER_KEY) naming the key file',
      );
    }
    // The default file itself damaged: pointing back at it would not help.
    const isDefault = basename(path) === 'ledger.key' && basename(dirname(path)) === '.baton';
    throw new InvalidInputError(
      `the ledger key file ${path} is not a private key`,
      'name the key file `baton ledger init` wrote with --key-file (or BATON_LEDGER_KEY)' +
        (isDefault ? ', or restore this one from its backup' : ', or leave both out for .baton/ledger.key'),
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new InvalidInputError(`${path} holds a ${key.asymmetricKeyType ?? '?'} key, not Ed25519`);
  }
  return signerOf(key);
}

/** A public key as given on the command line: `ed25519:<base64>` or the bare base64. */
export function parsePublicKey(text: string): string {
  const raw = text.trim().replace(/^ed25519:/, '');
  const bytes = Buffer.from(raw, 'base64');
  if (bytes.length !== 32 || bytes.toString('base64') !== raw) {
    throw new InvalidInputError(
      `${JSON.stringify(text)} is not an Ed25519 public key`,
      'give it as `baton ledger key` prints it: ed25519:<44 characters of base64>',
    );
  }
  return raw;
}

export interface KnownKey {
  readonly id: string;
  readonly publicKey: string;
}

/**
 * Hashes and checks signatures for the verifier. `known` are the keys the source carries (the
 * database's, or an export's header); `pinned`, when given, are the only keys trusted: the ones an
 * auditor holds out of band (an anchor file, --public-key). A key whose id is not its fingerprint
 * is ignored.
 */
export function ledgerCrypto(known: readonly KnownKey[], pinned: readonly KnownKey[] | null): LedgerCrypto {
  const keys = new Map<string, KeyObject>();
  const add = (key: KnownKey): void => {
    if (keyIdOf(key.publicKey) !== key.id || keys.has(key.id)) return;
    const publicPart = Buffer.from(key.publicKey, 'base64').toString('base64url');
    keys.set(
      key.id,
      nodeCrypto().createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicPart }, format: 'jwk' }),
    );
  };
  pinned?.forEach(add);
  if (pinned === null) known.forEach(add);
  return {
    sha256: sha256Hex,
    checkSignature: (keyId, hash, signature) => {
      const key = keys.get(keyId);
      if (key === undefined) {
        return pinned === null
          ? `it is signed by key ${keyId}, which the ledger does not know`
          : `it is signed by key ${keyId}, which is not a pinned key`;
      }
      const ok = nodeCrypto().verify(null, Buffer.from(hash, 'hex'), key, Buffer.from(signature, 'base64'));
      return ok ? null : `its signature does not verify under key ${keyId}`;
    },
  };
}
