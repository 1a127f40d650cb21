/**
 * A task finished while its job is being placed, made deterministic on a real server. The job's
 * row is held from outside, so the placement waits for it; the release that finishes the task
 * starts while it waits, and so reads the job as queued; then the outside lets go. The placement
 * commits first and the finish, whose lock on the job came after, must still end the job it now
 * finds placed. Before the fix the finish matched the job by the status its snapshot read and
 * left a placed job on a done task (test/race/done-race.test.ts saw it under load).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { waitUntil } from '../../../test/support/wait.js';
import { openPostgresStore } from './postgres-store.js';

test('a task finished while a placement of its job waits for the row ends the job the placement made', async () => {
  const url = await freshPostgresUrl();
  const store = await openPostgresStore({ url });
  const outside = new pg.Client({ connectionString: url });
  await outside.connect();
  try {
    const runner = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1, ttlMs: 600_000 });
    const host = { session: runner.id, ramTotalMb: 4096, ramReservedMb: 0, ramFreeMb: 4096, slotsMax: 4 };
    await store.hosts.register({ name: 'box-1', enabled: true, ...host });
    const lease = await store.leases.acquire({ name: 'dispatcher', holder: 'leader', ttlMs: 600_000 });
    assert.ok(lease.ok);
    await store.tasks.add({ key: 'T-1' });
    const { job } = await store.jobs.enqueue({ key: 'T-1' });
    const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 2, ttlMs: 600_000 });
    const claim = await store.claims.acquire({ key: 'T-1', session: agent.id });
    assert.ok(claim.ok);

    const waiting = async (): Promise<number> => {
      // Within a transaction, pg_stat_activity is read once and kept, unless told to read afresh.
      await outside.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await outside.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
      );
      return rows[0]?.n ?? 0;
    };
    await outside.query('BEGIN');
    await outside.query('SELECT id FROM jobs WHERE id = $1 FOR UPDATE', [job.id]);
    const term = { lease: 'dispatcher', holder: 'leader', term: lease.lease.term };
    const placing = store.dispatch.place({ id: job.id, host: 'box-1', term });
    await waitUntil(async () => (await waiting()) === 1, 30_000, 'the placement waiting for the job');
    const finishing = store.claims.release({
      key: 'T-1',
      session: agent.id,
      epoch: claim.claim.epoch,
      outcome: 'done',
    });
    await waitUntil(async () => (await waiting()) === 2, 30_000, 'the finish waiting for the job');
    await outside.query('COMMIT');

    const placed = await placing;
    assert.ok(placed.ok, 'the placement came first');
    assert.deepEqual(await finishing, { ok: true });
    assert.equal((await store.tasks.get('T-1'))?.state, 'done');
    const [after] = await store.jobs.list({ key: 'T-1' });
    assert.equal(after?.status, 'cancelled', 'the finish ended the job the placement made');
    assert.match(after?.reason ?? '', /task done by session/);
    const cancelled = await store.audit.list({ key: 'T-1', type: 'job:cancelled' });
    assert.equal(cancelled.length, 1, 'its ledger row');
  } finally {
    await outside.end();
    await store.close();
  }
});
