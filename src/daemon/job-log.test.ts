import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../test/support/fake-clock.js';
import { JobLog, logClosedWithin } from './job-log.js';

test('a log written on a full device (ENOSPC) drops its output and names the cause, never throwing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-joblog-'));
  symlinkSync('/dev/full', join(dir, 'job-1-attempt-1.log'));
  const told: string[] = [];
  const log = new JobLog(dir, 'job-1-attempt-1.log', 1 << 20, (p) => told.push(p));
  for (let i = 0; i < 100; i++) {
    log.write(Buffer.from(`line ${i}\n`));
    await new Promise((r) => setImmediate(r));
  }
  await log.end();
  assert.match(log.problem() ?? '', /ENOSPC.*output after it dropped/);
  assert.equal(told.length, 1, 'told once');
});

test('a write that fails only after end was called (the file still opening) still names the cause', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-joblog-'));
  symlinkSync('/dev/full', join(dir, 'job-1-attempt-1.log'));
  const told: string[] = [];
  const log = new JobLog(dir, 'job-1-attempt-1.log', 1 << 20, (p) => told.push(p));
  log.write(Buffer.from('the only line\n')); // queued: the file is not open yet
  await log.end(); // called before the write reaches the device, as on a slow disk
  assert.match(log.problem() ?? '', /ENOSPC.*output after it dropped/);
  assert.equal(told.length, 1, 'told once');
});

test('a capped log keeps its head as written and its tail at the end, with the bytes cut between', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-joblog-'));
  const log = new JobLog(dir, 'job-1-attempt-1.log', 1000, () => assert.fail('no problem expected'));
  const lines = Array.from({ length: 1000 }, (_, i) => `${i}\n`).join(''); // 3890 bytes
  for (let i = 0; i < lines.length; i += 70) log.write(Buffer.from(lines.slice(i, i + 70)));
  await log.end();
  const text = readFileSync(join(dir, 'job-1-attempt-1.log'), 'utf8');
  assert.ok(text.startsWith(lines.slice(0, 500)), 'the first 500 bytes');
  assert.ok(text.endsWith(lines.slice(-500)), 'the last 500 bytes');
  assert.match(text, /\[baton: 2890 bytes cut here; the last 500 bytes of output follow\]\n/);
  assert.equal(log.problem(), null);
  assert.match(
    log.cut() ?? '',
    /job-1-attempt-1\.log cut at its cap of 1000 bytes .*: 2890 bytes of output dropped/,
  );
});

test('a log under its cap says nothing was cut', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-joblog-'));
  const log = new JobLog(dir, 'job-1-attempt-1.log', 1000, () => assert.fail('no problem expected'));
  log.write(Buffer.alloc(1000, 'x'));
  await log.end();
  const text = readFileSync(join(dir, 'job-1-attempt-1.log'), 'utf8');
  assert.equal(text.replaceAll(/[^x]/g, '').length, 1000, 'every byte of output kept');
  assert.doesNotMatch(text, /bytes cut here/);
  assert.equal(log.cut(), null);
});

test('a second run of the same attempt (its runner shut down) adds to the log, never truncates it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-joblog-'));
  for (const run of ['first run\n', 'second run\n']) {
    const log = new JobLog(dir, 'job-1-attempt-1.log', 1000, () => assert.fail('no problem expected'));
    log.write(Buffer.from(run));
    await log.end();
  }
  assert.equal(readFileSync(join(dir, 'job-1-attempt-1.log'), 'utf8'), 'first run\nsecond run\n');
});

test('a run waits for its log to close, at most 10 s: a stuck disk keeps no job running for ever', async () => {
  const clock = new FakeClock();
  const job = { id: 7, key: 'k' };
  const said: string[] = [];
  const say = (line: string): number => said.push(line);
  let close: () => void = () => undefined;
  const closing = new Promise<void>((resolve) => (close = resolve));
  const inTime = logClosedWithin(closing, clock, job, say);
  await clock.sleeping(1);
  clock.advance(9_999);
  close();
  await inTime;
  assert.deepEqual(said, []);
  assert.equal(clock.pending, 0, 'its bound is dropped once the log closed');
  const stuck = logClosedWithin(new Promise<void>(() => undefined), clock, job, say);
  await clock.sleeping(1);
  clock.advance(10_000);
  await stuck;
  assert.equal(said.length, 1);
  assert.match(
    said[0] ?? '',
    /^job 7 k: its log file was not closed 10 s after its agent exited .*: the run is reported ended anyway/,
  );
  await logClosedWithin(undefined, clock, job, say);
  assert.equal(said.length, 1, 'no agent, no log to wait for');
});
