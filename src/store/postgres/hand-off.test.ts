/**
 * Hand-off at enqueue on PostgreSQL (docs/decisions/0024): a woken worker takes the job an enqueue
 * claimed for it with one statement, whose commit does not wait for the disk: no claim of its own.
 * The conformance suite (conformance/hand-off.ts) holds what both engines promise.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { statementsOf } from '../../../test/support/pg-statements.js';
import { settle } from '../conformance/harness.js';
import { openStore } from '../open.js';
import type { Store } from '../store.js';

let worker: Store;
let enqueuer: Store;

before(async () => {
  const url = await freshPostgresUrl();
  worker = await openStore(url);
  enqueuer = await openStore(url);
});

after(async () => {
  await worker.close();
  await enqueuer.close();
});

test('a woken worker takes the job its wait was handed with one statement not waited to disk', async () => {
  const session = await worker.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
  const waiter = await worker.wakeups.waiter();
  try {
    await settle(waiter);
    assert.equal(await worker.jobs.claimNext({ session: session.id, start: true, waitMs: 60_000 }), null);
    const { job } = await enqueuer.jobs.enqueue({ key: 'k', command: 'true' });
    assert.deepEqual([job.status, job.session, job.epoch], ['running', session.id, 1]);
    await waiter.wait(20_000);
    let taken = null;
    const sent = await statementsOf(async () => {
      taken = await worker.jobs.claimNext({ session: session.id, start: true, waitMs: 60_000 });
    });
    assert.deepEqual(taken, job, 'the job as the enqueue committed it');
    assert.equal(sent.length, 1, sent.join('\n---\n'));
    assert.match(sent[0] ?? '', /set_config\('synchronous_commit', 'off', true\)/);
    // The next call has nothing to take and does not take it again.
    assert.equal(await worker.jobs.claimNext({ session: session.id, start: true, waitMs: 60_000 }), null);
    assert.equal((await enqueuer.jobs.get(job.id))?.epoch, 1);
  } finally {
    waiter.close();
  }
});
