/**
 * A pull finish past the job's own time limit writes its `job:timed_out` row and fails the job in
 * one transaction (decision 0037, "Pull mode in one transaction"): a fault between the two (here a
 * real trigger on the real database that refuses the failing update, where the old code's second
 * commit was) leaves neither, never the audit row beside a running job. And a run that is no
 * longer the session's is not judged: the finish answers lost, as any other. The leader's sweep
 * (progress.sweepTimedOut, "The leader's sweep") is held to the same: its row and its failing finish
 * commit together, and the worker's late finish is refused with the same line.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError } from '../core/errors.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines, type TestDatabase } from '../../test/support/databases.js';
import { rawSql, type RawSql } from '../../test/support/raw-sql.js';
import { Pull } from './pull.js';

/** A trigger that refuses any update failing a job: the fault between the verdict and the finish. */
async function refuseFailing(db: TestDatabase, sql: RawSql): Promise<() => Promise<void>> {
  if (db.engine === 'sqlite') {
    await sql.exec(`CREATE TRIGGER fault_fail BEFORE UPDATE OF status ON jobs WHEN NEW.status = 'failed'
      BEGIN SELECT RAISE(ABORT, 'injected fault: the failing finish'); END`);
    return async () => void (await sql.exec('DROP TRIGGER fault_fail'));
  }
  await sql.exec(`CREATE FUNCTION fault_fail() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected fault: the failing finish'; END $$`);
  await sql.exec(`CREATE TRIGGER fault_fail BEFORE UPDATE ON jobs FOR EACH ROW
    WHEN (NEW.status = 'failed') EXECUTE FUNCTION fault_fail()`);
  return async () => {
    await sql.exec('DROP TRIGGER fault_fail ON jobs');
    await sql.exec('DROP FUNCTION fault_fail()');
  };
}

/** A job with a 1 s limit, taken and started by a pull worker, then left to run past it. */
async function pastItsLimit(store: Store) {
  const session = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 1 });
  await store.jobs.enqueue({ key: 'slow', timeLimitMs: 1_000 });
  const job = await store.jobs.claimNext({ session: session.id, start: true });
  assert.ok(job !== null);
  await sleep(1_100);
  return { id: job.id, session: session.id, epoch: job.epoch, status: 'done' };
}

for (const db of bothEngines()) {
  describe(`a timed-out pull finish (${db.name})`, () => {
    test('a fault in the failing finish leaves no job:timed_out row beside a running job; retried, both', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const sql = await rawSql(db, url);
      try {
        const finish = await pastItsLimit(store);
        const heal = await refuseFailing(db, sql);
        const pull = new Pull(store);
        await assert.rejects(pull.finish(finish, false), /injected fault/);
        assert.equal((await store.jobs.get(finish.id))?.status, 'running', 'the fault changed nothing');
        assert.deepEqual(
          await store.audit.list({ jobId: finish.id, type: 'job:timed_out' }),
          [],
          'no job:timed_out row without its failing finish',
        );
        await heal();
        await assert.rejects(pull.finish(finish, true), (error: unknown) => {
          assert.ok(error instanceof ConflictError);
          assert.match(error.message, /^job \d+ timed out: ran past its time limit of 1 s \(started .*\): /);
          assert.match(error.message, /it is failed, not done$/);
          return true;
        });
        assert.equal((await store.jobs.get(finish.id))?.status, 'failed');
        const types = (await store.audit.list({ jobId: finish.id })).map((row) => row.type);
        assert.deepEqual(types.slice(-2), ['job:timed_out', 'job:finished']);
      } finally {
        await sql.close();
        await store.close();
      }
    });

    test('a run no longer the session s (its session ended) is not judged: the finish is lost', async () => {
      const store = await openStore(await db.fresh());
      try {
        const finish = await pastItsLimit(store);
        await store.sessions.end(finish.session);
        const result = await new Pull(store).finish(finish, false);
        assert.equal(result.finished.ok, false);
        assert.equal(result.finished.job?.status, 'queued');
        assert.deepEqual(await store.audit.list({ jobId: finish.id, type: 'job:timed_out' }), []);
      } finally {
        await store.close();
      }
    });

    test("a fault in the sweep's failing finish leaves no job:timed_out row; healed, both", async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const sql = await rawSql(db, url);
      try {
        const finish = await pastItsLimit(store);
        const heal = await refuseFailing(db, sql);
        await assert.rejects(
          store.progress.sweepTimedOut({ max: 10, leaderSession: finish.session }),
          /injected fault/,
        );
        assert.equal((await store.jobs.get(finish.id))?.status, 'running', 'the fault changed nothing');
        assert.deepEqual(await store.audit.list({ jobId: finish.id, type: 'job:timed_out' }), []);
        await heal();
        const { failed } = await store.progress.sweepTimedOut({ max: 10, leaderSession: finish.session });
        assert.deepEqual(
          failed.map((job) => [job.id, job.status]),
          [[finish.id, 'failed']],
        );
        const types = (await store.audit.list({ jobId: finish.id })).map((row) => row.type);
        assert.deepEqual(types.slice(-2), ['job:timed_out', 'job:finished']);
      } finally {
        await sql.close();
        await store.close();
      }
    });

    test("a finish after the leader's sweep failed the run: the timed-out line, nothing taken", async () => {
      const store = await openStore(await db.fresh());
      try {
        const finish = await pastItsLimit(store);
        assert.equal(
          (await store.progress.sweepTimedOut({ max: 10, leaderSession: finish.session })).failed.length,
          1,
        );
        await store.jobs.enqueue({ key: 'next' });
        const pull = new Pull(store);
        for (const [status, ending] of [
          ['done', /: the leader failed it before this finish came: it is failed, not done$/],
          ['failed', /: the leader failed it as timed out before this finish came$/],
        ] as const) {
          await assert.rejects(pull.finish({ ...finish, status }, true), (error: unknown) => {
            assert.ok(error instanceof ConflictError);
            assert.match(
              error.message,
              /^job \d+ timed out: ran past its time limit of 1 s \(started .*\): /,
            );
            assert.match(error.message, ending);
            return true;
          });
        }
        const [next] = (await store.jobs.list({ status: ['queued'] })).map((job) => job.key);
        assert.equal(next, 'next', 'with --next nothing was taken');
      } finally {
        await store.close();
      }
    });

    test("the worker's own finish past its limit, sent again, is lost, not blamed on the leader", async () => {
      const store = await openStore(await db.fresh());
      try {
        const finish = await pastItsLimit(store);
        const pull = new Pull(store);
        await assert.rejects(pull.finish(finish, false), /it is failed, not done/);
        await store.jobs.enqueue({ key: 'next' });
        // A retried request (a dropped answer): the run is no longer the session's, so it is lost,
        // and with --next the next job is taken, as for any lost finish.
        const again = await pull.finish(finish, true);
        assert.equal(again.finished.ok, false);
        assert.equal(again.next?.key, 'next');
      } finally {
        await store.close();
      }
    });
  });
}
