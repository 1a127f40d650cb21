/** The log of a repeating failure (failure-log.ts), on a clock the test moves. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../test/support/fake-clock.js';
import { failureLog } from './failure-log.js';

const refused = new Error('cannot use PostgreSQL at 127.0.0.1:5432: connect ECONNREFUSED');

test('a failure every 0.5 s: its first line, one per 30 s with a count, and one when it works again', () => {
  const clock = new FakeClock();
  const lines: string[] = [];
  const failures = failureLog((line) => lines.push(line), 'runner', clock);
  failures.recovered();
  assert.deepEqual(lines, [], 'nothing to say while nothing failed');
  for (let i = 0; i < 8; i++) {
    failures.failed(refused);
    clock.advance(500);
  }
  assert.deepEqual(lines, [`runner: ${refused.message}`], '8 failures in 4 s: one line');
  for (let i = 0; i < 53; i++) {
    failures.failed(refused);
    clock.advance(500);
  }
  assert.equal(lines.length, 2, lines.join('\n'));
  assert.equal(lines[1], `runner: ${refused.message} (60 failures in the last 30.0 s)`);
  // What the failures say may change (a dropped connection, then a refused one): still counted.
  failures.failed(new Error('Connection terminated unexpectedly'));
  clock.advance(500);
  failures.failed(refused);
  failures.recovered();
  assert.equal(
    lines[2],
    'runner: works again after 31.0 s of failures; 2 more failure(s) since the last line',
  );
  failures.recovered();
  assert.equal(lines.length, 3, 'said once');
  failures.failed(refused);
  assert.equal(lines[3], `runner: ${refused.message}`, 'a new outage starts with its line');
});
