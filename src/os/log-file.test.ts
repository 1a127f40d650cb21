/**
 * A log file written just after its job was queued is the job's, though the kernel's coarse clock
 * may stamp it a few ms before the queue time; a file older by far (a database made afresh) is not.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLogTail } from './log-file.js';

test('a file stamped a few ms before the queue time is read; one a minute older is not', () => {
  const path = join(mkdtempSync(join(tmpdir(), 'baton-log-')), 'job-1-attempt-1.log');
  writeFileSync(path, 'line\n');
  const queuedAt = Date.now();
  const stamp = (ms: number): void => utimesSync(path, new Date(ms), new Date(ms));
  stamp(queuedAt - 5);
  assert.equal(readLogTail(path, 1024, queuedAt), 'line\n');
  stamp(queuedAt - 60_000);
  assert.equal(readLogTail(path, 1024, queuedAt), null);
});
