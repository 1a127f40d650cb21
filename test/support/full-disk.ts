/**
 * Real full disks for the disk-fault tests: a small tmpfs mounted in a temp directory (root only)
 * and a filler that writes to it until the device says ENOSPC.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Run } from './cli.js';

/** A tmpfs mounted with `options` (`size=1m`, …) in a new temp directory, or null where this process may not mount one. */
export function smallDisk(prefix: string, options: string): string | null {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

/** Fills the file system holding `dir` to the last byte. */
export function fill(dir: string): void {
  const fd = openSync(join(dir, 'filler'), 'a');
  const block = Buffer.alloc(4096);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
}

/** The CLI's answer to a disk fault: exit `code` and one line matching `pattern`, no stack or debug hint. */
export function oneLine(run: Run, code: number, pattern: RegExp): void {
  assert.equal(run.code, code, `exit ${run.code}: ${run.stderr}`);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0] ?? '', pattern);
  assert.doesNotMatch(run.stderr, /unreachable|check the path|BATON_DEBUG/);
}
