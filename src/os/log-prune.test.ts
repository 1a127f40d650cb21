import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pruneLogs } from './log-prune.js';

const DAY = 86_400_000;

/** A log of `kb` KiB last written `daysAgo` days before `now`. */
function logFile(dir: string, name: string, kb: number, daysAgo: number, now: number): void {
  writeFileSync(join(dir, name), Buffer.alloc(kb * 1024, 'x'));
  const at = (now - daysAgo * DAY) / 1000;
  utimesSync(join(dir, name), at, at);
}

test('prunes logs past the age limit, then the oldest past the size limit, sparing running jobs and others', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-logs-'));
  const now = Date.now();
  logFile(dir, 'job-1-attempt-1.log', 10, 30, now); // too old
  logFile(dir, 'job-2-attempt-1.log', 10, 20, now); // too old, but its job runs
  logFile(dir, 'job-3-attempt-1.log', 40, 5, now); // oldest of the young: goes for size
  logFile(dir, 'job-4-attempt-2.log', 40, 3, now);
  logFile(dir, 'job-5-attempt-1.log', 40, 1, now);
  logFile(dir, 'notes.txt', 500, 60, now); // not a job log
  const r = pruneLogs(
    dir,
    { maxAgeMs: 14 * DAY, maxBytes: 100 * 1024 },
    now,
    (n) => n === 'job-2-attempt-1.log',
  );
  assert.deepEqual(r.removed, ['job-1-attempt-1.log', 'job-3-attempt-1.log']);
  assert.equal(r.freedBytes, 50 * 1024);
  assert.deepEqual(readdirSync(dir).sort(), [
    'job-2-attempt-1.log',
    'job-4-attempt-2.log',
    'job-5-attempt-1.log',
    'notes.txt',
  ]);
});

test('pruning a log directory that does not exist yet removes nothing', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'baton-logs-')), 'logs');
  assert.deepEqual(pruneLogs(dir, { maxAgeMs: DAY, maxBytes: 1 }, Date.now(), () => false).removed, []);
  assert.equal(existsSync(dir), false);
});
