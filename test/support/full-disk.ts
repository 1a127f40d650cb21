/**
 * Real full disks for the disk-fault tests: a small tmpfs mounted in a temp directory (root only)
 * and a filler that writes to it until the device says ENOSPC.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statfsSync,
  statSync,
  writeSync,
} from 'node:fs';
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

/** The free bytes of the file system holding `dir`, and its five largest files, for a failure's message. */
export function describeDisk(dir: string): string {
  const fs = statfsSync(dir);
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => ({ name, stat: statSync(join(dir, name), { throwIfNoEntry: false }) }))
    .filter((file) => file.stat?.isFile() === true)
    .map((file) => ({ name: file.name, size: file.stat?.size ?? 0 }))
    .sort((a, b) => b.size - a.size);
  const largest = files.slice(0, 5).map((file) => `${file.name} ${file.size}`);
  return `${fs.bavail * fs.bsize} bytes free on ${dir}; ${files.length} files, the largest: ${largest.join(', ')}`;
}

/**
 * The CLI's answer to a disk fault: exit `code` and one line matching `pattern`, no stack or debug
 * hint. When the exit code is wrong, the message adds what `context` says (describeDisk, say).
 */
export function oneLine(run: Run, code: number, pattern: RegExp, context?: () => string): void {
  if (run.code !== code)
    assert.fail(`exit ${run.code}, not ${code}: ${run.stderr}${context ? `\n${context()}` : ''}`);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0] ?? '', pattern);
  assert.doesNotMatch(run.stderr, /unreachable|check the path|BATON_DEBUG/);
}
