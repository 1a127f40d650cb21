/**
 * git() tells a directory that does not exist from a git that is not installed: Node reports both
 * as ENOENT from the spawn.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidInputError } from '../core/errors.js';
import { git } from './git.js';

test('a working directory that does not exist is named as such, not as git missing', async () => {
  const gone = join(mkdtempSync(join(tmpdir(), 'baton-git-cwd-')), 'nonexistent');
  await assert.rejects(git(['status'], { cwd: gone }), (error: unknown) => {
    assert.ok(error instanceof InvalidInputError);
    assert.equal(error.message, `the directory ${gone} does not exist`);
    return true;
  });
});
