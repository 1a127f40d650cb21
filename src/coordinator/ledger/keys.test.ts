/**
 * A ledger key made by createKeyFile (from a random 32-byte seed, not generateKeyPairSync: see
 * keys.ts): an Ed25519 private key in PKCS#8 PEM, 0600, loaded back as the same signer, whose
 * signatures verify with its public key; two keys differ.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyFile, loadKeyFile } from './keys.js';

test('createKeyFile writes an Ed25519 key whose signatures verify; each key is new', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-keys-'));
  const made = createKeyFile(join(dir, 'a.key'));
  const pem = readFileSync(join(dir, 'a.key'), 'utf8');
  assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal(statSync(join(dir, 'a.key')).mode & 0o777, 0o600);
  const loaded = loadKeyFile(join(dir, 'a.key'));
  assert.deepEqual([loaded.keyId, loaded.publicKey], [made.keyId, made.publicKey]);
  assert.equal(Buffer.from(made.publicKey, 'base64').length, 32);
  const hash = 'ab'.repeat(32);
  const signature = Buffer.from(made.sign(hash), 'base64');
  const publicKey = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(made.publicKey, 'base64').toString('base64url') },
    format: 'jwk',
  });
  assert.equal(verify(null, Buffer.from(hash, 'hex'), publicKey, signature), true);
  assert.notEqual(createKeyFile(join(dir, 'b.key')).publicKey, made.publicKey);
});
