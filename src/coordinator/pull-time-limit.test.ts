/**
 * A pull finish past the job's time limit whose run stops being the session's between the check
 * and the failing finish (the session ended, or was rescued, meanwhile): the refusal says how the
 * job actually ended (queued again), not "it is failed" (decision 0037, "Review fixes"). The
 * interleaving is made real: the store's finish first ends the session on the same database.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError } from '../core/errors.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines } from '../../test/support/databases.js';
import { Pull } from './pull.js';

/** The store, with its session ended (its pull job requeued) just before each finish. */
function endingFirst(store: Store, session: number): Store {
  const jobs = new Proxy(store.jobs, {
    get(target, name, receiver) {
      if (name !== 'finish') return Reflect.get(target, name, receiver) as unknown;
      return async (params: Parameters<Store['jobs']['finish']>[0]) => {
        await store.sessions.end(session);
        return target.finish(params);
      };
    },
  });
  return new Proxy(store, {
    get: (target, name, receiver) =>
      name === 'jobs' ? jobs : (Reflect.get(target, name, receiver) as unknown),
  });
}

for (const db of bothEngines()) {
  describe(`a timed-out pull finish that lost its run meanwhile (${db.name})`, () => {
    test('says the job is queued again and its result did not count, not that it is failed', async () => {
      const store = await openStore(await db.fresh());
      try {
        const session = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 1 });
        await store.jobs.enqueue({ key: 'slow', timeLimitMs: 1_000 });
        const job = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(job !== null);
        await sleep(1_100);
        const pull = new Pull(endingFirst(store, session.id));
        const finish = { id: job.id, session: session.id, epoch: job.epoch, status: 'done' };
        await assert.rejects(pull.finish(finish, false), (error: unknown) => {
          assert.ok(error instanceof ConflictError);
          assert.match(error.message, /^job \d+ timed out: ran past its time limit of 1 s \(started .*\): /);
          assert.match(error.message, /its result \(done\) did not count: it is queued$/);
          return true;
        });
        assert.equal((await store.jobs.get(job.id))?.status, 'queued');
      } finally {
        await store.close();
      }
    });
  });
}
