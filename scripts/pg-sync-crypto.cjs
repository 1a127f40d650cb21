// Bundled in place of pg's lib/crypto/utils.js by scripts/bundle-cli.mjs: the same functions with
// node:crypto's synchronous ones, where pg's use Web Crypto (crypto.subtle), whose start and six
// asynchronous steps per SCRAM-SHA-256 login cost 7-13 ms against 1.4 ms for the same PBKDF2,
// HMACs and hashes here (docs/decisions/0007). src/cli/pg-sync-crypto.test.ts holds both to the
// same bytes.
'use strict';
const { createHash, createHmac, pbkdf2Sync, randomBytes: random } = require('node:crypto');

/** Web Crypto takes ArrayBuffers too, as pg's functions do; node:crypto wants a view of them. */
const view = (data) => (data instanceof ArrayBuffer ? new Uint8Array(data) : data);

exports.md5 = async (data) => createHash('md5').update(data, 'utf-8').digest('hex');

exports.postgresMd5PasswordHash = async (user, password, salt) =>
  'md5' + (await exports.md5(Buffer.concat([Buffer.from(await exports.md5(password + user)), salt])));

exports.randomBytes = (length) => random(length);

exports.deriveKey = async (password, salt, iterations) =>
  pbkdf2Sync(password, view(salt), iterations, 32, 'sha256');

exports.sha256 = async (data) => createHash('sha256').update(view(data)).digest();

/** `SHA-256`, as Web Crypto names it, is node:crypto's `sha256`. */
exports.hashByName = async (name, data) =>
  createHash(name.replace('-', '').toLowerCase()).update(view(data)).digest();

exports.hmacSha256 = async (key, message) => createHmac('sha256', view(key)).update(message).digest();
