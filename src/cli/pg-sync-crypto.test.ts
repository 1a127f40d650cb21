/**
 * The bundled CLI logs in to PostgreSQL with scripts/pg-sync-crypto.cjs in place of pg's own
 * lib/crypto/utils.js (scripts/bundle-cli.mjs): each function must give the bytes pg's gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';

type Bytes = ArrayBuffer | Uint8Array;

interface PgCrypto {
  postgresMd5PasswordHash(user: string, password: string, salt: Buffer): Promise<string>;
  randomBytes(length: number): Uint8Array;
  deriveKey(password: string, salt: Uint8Array, iterations: number): Promise<Bytes>;
  sha256(data: Bytes): Promise<Bytes>;
  hashByName(name: string, data: Bytes): Promise<Bytes>;
  hmacSha256(key: Bytes, message: string): Promise<Bytes>;
  md5(data: string | Buffer): Promise<string>;
}

const hex = (bytes: Bytes): string => Buffer.from(new Uint8Array(bytes)).toString('hex');

test("the stand-in for pg's crypto functions gives the bytes pg's own give", async () => {
  const require = createRequire(import.meta.url);
  const pg = require('pg/lib/crypto/utils.js') as PgCrypto;
  const ours = require(join(repoRoot(), 'scripts', 'pg-sync-crypto.cjs')) as PgCrypto;
  const salt = Buffer.from('c2FsdHNhbHRzYWx0c2FsdA==', 'base64');
  const key = await pg.deriveKey('pässword', salt, 4096);
  assert.equal(hex(await ours.deriveKey('pässword', salt, 4096)), hex(key));
  assert.equal(hex(await ours.hmacSha256(key, 'Client Key')), hex(await pg.hmacSha256(key, 'Client Key')));
  assert.equal(hex(await ours.sha256(key)), hex(await pg.sha256(key)));
  for (const name of ['SHA-256', 'SHA-384', 'SHA-512']) {
    assert.equal(hex(await ours.hashByName(name, key)), hex(await pg.hashByName(name, key)), name);
  }
  assert.equal(await ours.md5('text'), await pg.md5('text'));
  const md5Salt = Buffer.from([1, 2, 3, 4]);
  assert.equal(
    await ours.postgresMd5PasswordHash('user', 'secret', md5Salt),
    await pg.postgresMd5PasswordHash('user', 'secret', md5Salt),
  );
  assert.equal(ours.randomBytes(18).length, 18);
  assert.notEqual(hex(ours.randomBytes(18)), hex(ours.randomBytes(18)));
});
