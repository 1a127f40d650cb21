/**
 * The operator's view of a host whose `baton up` is gone. The host row keeps its last report for
 * ever, so `baton hosts` used to list a SIGKILLed runner's host as `enabled` with an old
 * timestamp, and `baton queue list` its job as `running`, with nothing saying that no process
 * serves them or that nothing places queued work without a leader.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { agentStarted, clusterFixture } from './cluster-support.js';

test('baton hosts and queue list say when a host is silent or down, and when nothing leads', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    await c.store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
    const first = c.up('solo');
    await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
    const served = await c.baton('hosts');
    assert.match(served.stdout, /solo .* ago\n$/, served.stdout);
    assert.doesNotMatch(served.stdout, /SILENT|DOWN|has not reported/);
    const glance = await c.baton('status');
    assert.equal(glance.code, 0, glance.stderr);
    assert.match(glance.stdout, /^leader +solo \(session \d+, pid \d+\), term 1, lease ends in /m);
    assert.match(glance.stdout, /^hosts +1 live; 1\/\d+ slots busy$/m);
    assert.match(glance.stdout, /^jobs +1 running, 0 claimed, 0 queued \(0 waiting\); ended: none/m);
    assert.match(glance.stdout, /^claims +1 live, oldest heartbeat .* ago$/m);

    first.signal('SIGKILL');
    await first.exited();
    await c.store.jobs.enqueue({ key: 'next', command: 'true' });
    // The runner's TTL is its --stale-after, 2 s here; nobody is left to rescue its session.
    await waitUntil(
      async () => /SILENT/.test((await c.baton('hosts')).stdout),
      10_000,
      'the host to show silent',
    );
    const hosts = await c.baton('hosts');
    assert.equal(hosts.code, 0, hosts.stderr);
    assert.match(hosts.stdout, /solo .* s ago, SILENT/);
    assert.match(
      hosts.stdout,
      /host solo has not reported for .*: its `baton up` is dead or paused; its 1 job/,
    );
    assert.match(hosts.stdout, /start `baton up --host solo` on that machine/);
    const queue = await c.baton('queue', 'list');
    assert.match(queue.stdout, /long +running +solo/);
    assert.match(queue.stdout, /host solo has not reported for/);
    assert.match(queue.stdout, /no dispatcher leader: queued jobs wait until a `baton up` runs/);
    const json = JSON.parse((await c.baton('hosts', '--json')).stdout) as { liveness: string }[];
    assert.equal(json[0]?.liveness, 'silent');
    // `baton status` says the same at a glance: no leader, the host silent, its job still running.
    const silent = await c.baton('status');
    assert.match(silent.stdout, /^leader +none: term 1 ended or expired — start `baton up` on a host/m);
    assert.match(
      silent.stdout,
      /^hosts +0 live, 1 silent; 0\/0 slots busy, 1 more running on silent hosts \(solo\)\n +solo silent, last report .* ago/m,
    );
    assert.match(silent.stdout, /^jobs +1 running, 0 claimed, 1 queued/m);
    const glanceJson = JSON.parse((await c.baton('status', '--json')).stdout) as Record<string, unknown>;
    assert.equal((glanceJson['leader'] as { current: boolean }).current, false);
    assert.deepEqual(glanceJson['jobs'], {
      queued: 1,
      claimed: 0,
      running: 1,
      done: 0,
      failed: 0,
      oom_killed: 0,
      cancelled: 0,
      escalated: 0,
    });

    const second = c.up('solo');
    await second.waitForLog(/leading the dispatcher/);
    await waitUntil(
      async () => !/SILENT/.test((await c.baton('hosts')).stdout),
      10_000,
      'the host served again',
    );
    // Stopped on purpose (SIGTERM): its host drained, no longer enabled (decision 0034's
    // amendment). Killed and rescued by another host's leader: still enabled, and down.
    second.signal('SIGTERM');
    await second.exited();
    const stopped = await c.baton('hosts');
    assert.match(stopped.stdout, /^solo\s+drained\s.* ago, DOWN$/m, stopped.stdout);
    const third = c.up('solo');
    await third.waitRunning();
    third.signal('SIGKILL');
    await third.exited();
    c.up('other');
    await waitUntil(
      async () => /^solo\s+enabled\s.* ago, DOWN$/m.test((await c.baton('hosts')).stdout),
      20_000,
      'solo down',
    );
    const down = await c.baton('hosts');
    assert.match(down.stdout, /host solo is down: its `baton up` stopped or was rescued/);
  } finally {
    await c.close();
  }
});

test('a baton up killed mid-drain is told silent with its job awaiting rescue, not drained', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    await c.store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
    const up = c.up('hd', '--drain', '60s');
    await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
    up.signal('SIGTERM');
    await up.waitForLog(/draining: 1 run\(s\) to finish/);
    up.signal('SIGKILL');
    await up.exited();
    // Its TTL is its --stale-after, 2 s here; nobody is left to rescue its session.
    await waitUntil(
      async () => /^hosts +0 live, 1 silent/m.test((await c.baton('status')).stdout),
      10_000,
      'the host to show silent',
    );
    const status = await c.baton('status');
    assert.equal(status.code, 0, status.stderr);
    assert.doesNotMatch(status.stdout, /drained/, status.stdout);
    assert.match(
      status.stdout,
      /^ +hd silent while draining, last report .* ago: its `baton up` is dead or paused and its 1 job\(s\) await rescue/m,
      status.stdout,
    );
    const doctor = await c.baton('doctor');
    assert.match(
      doctor.stdout,
      /^warn +hosts +1 host\(s\): 0 live, 1 silent; silent while disabled or draining: hd .*1 job\(s\) there await rescue/m,
    );
    assert.match((await c.baton('hosts')).stdout, /^hd +silent /m);
  } finally {
    await c.close();
  }
});
