/**
 * `baton github sync` as a process, against the stand-in: `--every` keeps running pass after pass
 * without piling up abort listeners, and a `--token-env` that is no variable name is said so.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batonBare } from '../support/cli.js';
import { REPO } from './fixture.js';

describe('baton github sync (a process)', () => {
  test('--token-env 1X is refused as no variable name, not as a variable to export (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-token-env-'));
    const db = join(dir, 'baton.db');
    const run = await batonBare({ BATON_DB: db }, 'github', 'sync', REPO, '--token-env', '1X');
    const created = existsSync(db);
    rmSync(dir, { recursive: true, force: true });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--token-env "1X" is not a variable name/);
    assert.doesNotMatch(run.stderr, /export 1X/);
    assert.equal(created, false, 'refused before the database was opened');
  });
});
