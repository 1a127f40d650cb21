/**
 * `npm run demo` works: every job ends, the leader is killed while it runs jobs and replaced, the
 * jobs it ran are requeued and run again, and the outcomes show.
 */
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
  const killed = /SIGKILL the leader \((\w+), term 1\) while it runs (#\d+(?:, #\d+)*);/.exec(r.stdout);
  assert.ok(killed, `the leader was killed while it ran jobs: ${r.stdout}`);
  // Each job it ran was requeued: claimed again (a later epoch), ended on the standby.
  const requeued = /Requeued after the SIGKILL and run again: (.*)/.exec(r.stdout)?.[1] ?? '';
  assert.match(requeued, /github:acme\/api#\d+ \(\w+ on \w+\)/, r.stdout);
  assert.doesNotMatch(requeued, new RegExp(` on ${killed[1]}\\)`), 'run again on the standby');
  assert.match(r.stdout, /api#4\s+failed\s+attempt \d .*exit code 1/);
  assert.match(r.stdout, /api#6\s+oom_killed/);
  assert.match(r.stdout, /api#1\s+done/);
  assert.doesNotMatch(r.stdout, /[ \t]$/m, 'no line of the demo ends in blanks');
});
