/** `npm run demo` works: every job ends, the leader is killed and replaced, and the outcomes show. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './cluster-support.js';

test('runs the demo to the end: done, failed and oom_killed jobs, and a failover to term 2', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'dist', 'scripts', 'demo.js'), '--quick'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /All jobs ended\. The dispatcher lease is at term 2\./);
  assert.match(r.stdout, /api#4\s+failed\s+attempt \d .*exit code 1/);
  assert.match(r.stdout, /api#6\s+oom_killed/);
  assert.match(r.stdout, /api#1\s+done/);
  assert.doesNotMatch(r.stdout, /[ \t]$/m, 'no line of the demo ends in blanks');
});
