/**
 * A job enqueued for a task someone holds (a person's `baton claim`, an earlier run still
 * stopping) waits in the queue, naming the claim, and runs once the claim ends. It used to be
 * placed, refused at its start and ended `cancelled`: the work silently did not happen unless an
 * operator noticed and ran `baton retry`. SQLite here; the conformance suite proves the
 * candidates' read and the pass on both engines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../support/databases.js';
import { clusterFixture } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

test('sqlite: a job for a claimed task waits under baton up, naming the claim, and runs once it is released', async () => {
  const c = await clusterFixture(sqliteDatabase());
  // baton up here rescues a session silent for 2 s (--stale-after 2): the person keeps beating.
  let beating: NodeJS.Timeout | undefined;
  try {
    await c.store.tasks.add({ key: 'held' });
    const human = await c.store.sessions.start({ kind: 'human', host: 'laptop', pid: process.pid });
    beating = setInterval(
      () => void c.store.sessions.heartbeat({ session: human.id }).catch(() => undefined),
      300,
    );
    const claim = await c.store.claims.acquire({ key: 'held', session: human.id });
    assert.ok(claim.ok);
    const { job } = await c.store.jobs.enqueue({ key: 'held', command: 'exit 0' });
    const up = c.up('solo');
    const waiting = `waiting for held, claimed by session ${human.id} on laptop`;
    let reason: string | null | undefined;
    await waitUntil(
      async () => (reason = (await c.store.jobs.get(job.id))?.reason) === waiting,
      20_000,
      'the job to wait for the claim',
    ).catch((error: unknown) => assert.fail(`${String(error)}; its reason: ${reason}\n${up.log()}`));
    // Passes later it still waits, its attempt unused.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const still = await c.store.jobs.get(job.id);
    assert.equal(still?.status, 'queued', up.log());
    assert.equal(still?.attempt, 0);
    assert.equal(still?.reason, waiting);
    const { epoch } = claim.claim;
    assert.ok(
      (await c.store.claims.release({ key: 'held', session: human.id, epoch, outcome: 'released' })).ok,
    );
    await waitUntil(
      async () => (await c.store.jobs.get(job.id))?.status === 'done',
      30_000,
      `the job to run once the claim ended:\n${up.log()}`,
    );
    assert.equal((await c.store.jobs.get(job.id))?.attempt, 1);
    const ended = await c.store.audit.list({ jobId: job.id, type: 'job:finished' });
    assert.deepEqual(
      ended.map((entry) => entry.detail['status']),
      ['done'],
    );
  } finally {
    clearInterval(beating);
    await c.close();
  }
});
