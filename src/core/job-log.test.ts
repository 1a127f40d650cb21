import { test } from 'node:test';
import assert from 'node:assert/strict';
import { elsewhereNote, logAttempt, logNotBefore } from './job-log.js';
import type { Job } from './job.js';

const QUEUED_AT = 1_000_000;
const job = (fields: Partial<Job>): Job =>
  ({ id: 7, attempt: 1, status: 'running', queuedAt: QUEUED_AT, pid: null, host: 'box-1', ...fields }) as Job;

test('an older file of the log name is not the run until its agent is attached: the runner sets it aside then', () => {
  // Marked running before its workspace is made and its agent spawned: a file of the name written
  // before the job was queued is still another database's, not yet set aside.
  assert.equal(logNotBefore(job({ status: 'running', pid: null }), 1), QUEUED_AT);
  assert.equal(logNotBefore(job({ status: 'claimed', pid: null }), 1), QUEUED_AT);
  assert.equal(logNotBefore(job({ status: 'running', pid: 4321 }), 1), 0, 'its agent runs: the file is its');
  assert.equal(logNotBefore(job({ status: 'failed', pid: 4321 }), 1), 0);
  assert.equal(logNotBefore(job({ attempt: 2, status: 'claimed' }), 1), 0, 'an earlier attempt ran');
  assert.equal(logNotBefore(job({ attempt: 1, status: 'queued' }), 2), QUEUED_AT, 'the attempt to come');
});

test('an attempt that ended without an agent says no agent of baton up ran, not that it has not started', () => {
  assert.equal(
    elsewhereNote(job({ status: 'done', pid: null }), [], 1),
    'no log: no agent of `baton up` ran in this attempt',
  );
  assert.equal(elsewhereNote(job({ status: 'claimed' }), [], 1), 'attempt 1 of job 7 has not started');
});

test('a run given back on a graceful stop (job.attempt lowered, queued again) stays readable by its number', () => {
  const given = job({ status: 'queued', attempt: 0, pid: null });
  assert.equal(logAttempt(given, undefined, false, 1), 1, 'the latest run, as the ledger shows it');
  assert.equal(logAttempt(given, 1, false, 1), 1);
  assert.throws(
    () => logAttempt(given, 2, false, 1),
    (error: { hint?: string }) => /attempt 1 alone/.test(error.hint ?? ''),
  );
  assert.throws(
    () => logAttempt(given, undefined, false),
    (error: { hint?: string }) => /has not run yet/.test(error.hint ?? ''),
  );
  assert.equal(logAttempt(given, undefined, true, 1), 1, 'a follower waits for its rerun, the same number');
});
