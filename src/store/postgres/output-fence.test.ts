/**
 * The output stream's fence on PostgreSQL (output.ts): an append that starts while a takeover of
 * its job is not yet committed waits for it (the job rows are locked FOR SHARE) and then, reading
 * the job's newest row, writes nothing: a runner's write whose snapshot predates a takeover never
 * commits after it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPostgresStore } from '../../../test/support/databases.js';
import { outputRows } from '../../core/output-stream.js';
import { givenHost, givenLeader } from '../conformance/dispatch.js';

test('an output append racing a takeover of its job waits for it, then writes nothing', async () => {
  const { client, store } = await freshPostgresStore();
  try {
    const { session } = await givenHost(store);
    const term = await givenLeader(store);
    const { job } = await store.jobs.enqueue({ key: 'k' });
    const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
    assert.ok(placed.ok);
    await store.jobs.start({ id: job.id, session: session.id, epoch: placed.job.epoch });
    const row = { job: job.id, attempt: placed.job.attempt, epoch: placed.job.epoch, ended: false };
    // The takeover, held open: the job goes to a new epoch (as a rescue and a new placement make it).
    await client.query('BEGIN');
    await client.query('UPDATE jobs SET epoch = epoch + 1 WHERE id = $1', [job.id]);
    let answered = false;
    const append = store.output
      .append({
        session: session.id,
        rows: outputRows([{ ...row, offset: 0, bytes: Buffer.from('late\n') }]),
      })
      .finally(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(answered, false, 'the append waits for the takeover');
    await client.query('COMMIT');
    assert.deepEqual(await append, [], 'nothing written: the job moved on');
    const read = await store.output.read({ job: job.id, attempt: placed.job.attempt, offset: 0 });
    assert.deepEqual([read.rows.length, read.size], [0, 0]);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
    await store.close();
  }
});
