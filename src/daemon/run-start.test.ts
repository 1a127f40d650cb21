/**
 * The start of a run (run-start.ts, beginRun) when the task was claimed between the dispatcher's
 * placement and the runner's start: the job goes back to the queue at once with its attempt given
 * back and the holder named as the reason, its run's agent session is not left holding anything,
 * and the claim stays with the session that took it. Made to happen deterministically: place,
 * claim from another session, then start. Also: the reads that need no claim (the task, its
 * workspace plan) are sent beside the start, not after its answer. Real stores on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ATTEMPT_GIVEN_BACK } from '../core/retry.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines } from '../../test/support/databases.js';
import { placedOnBox1 } from '../../test/support/placed-job.js';
import { systemClock } from './clock.js';
import { beginRun } from './run-start.js';

const POLICY = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };

for (const db of bothEngines()) {
  describe(`${db.name}: a run's start`, () => {
    test('gives the job back at its old attempt, naming the holder, when a claim landed after placement', async () => {
      const store = await openStore(await db.fresh());
      try {
        const { runner, queued, job: placedJob } = await placedOnBox1(store, 'k');
        const placed = { job: placedJob };
        assert.equal(placed.job.status, 'claimed');

        // The claim lands between the placement and the start.
        const human = await store.sessions.start({ kind: 'human', host: 'laptop', pid: 9 });
        const taken = await store.claims.acquire({ key: 'k', session: human.id });
        assert.ok(taken.ok);

        const lines: string[] = [];
        const options = {
          store,
          clock: systemClock,
          host: 'box-1',
          log: (line: string) => lines.push(line),
          policy: POLICY,
          heartbeatIntervalMs: 1000,
          sessionTtlMs: 10_000,
        };
        const guard = { id: placed.job.id, session: runner.id, epoch: placed.job.epoch };
        const begun = await beginRun(options, placed.job, guard);

        assert.ok(begun !== null, 'the start itself was not refused');
        assert.equal(begun.claim, null, 'the run must not go on');
        const since = new Date(taken.claim.claimedAt).toISOString();
        const reason = `task held by session ${human.id} on laptop since ${since}`;
        const after = await store.jobs.get(queued.id);
        assert.deepEqual(
          [after?.status, after?.attempt, after?.session, after?.host],
          ['queued', queued.attempt, null, null],
          'queued again at its old attempt, on no host',
        );
        assert.ok(after !== null && after.runAfter <= (await store.now()), 'at once, with no backoff');
        const why = `${reason}${ATTEMPT_GIVEN_BACK}`;
        assert.equal(after?.reason, `requeued: ${why}`);
        const requeued = (await store.audit.list({ jobId: queued.id, type: 'job:requeued' })).at(-1);
        assert.deepEqual(requeued?.detail, { reason: why, attempt: queued.attempt });
        assert.deepEqual(lines, [`job ${queued.id} k: ${reason}: back to the queue as queued`]);
        assert.equal((await store.claims.current('k'))?.session, human.id, 'the claim stays with its taker');
        const history = await store.claims.history('k');
        assert.equal(history.length, 1, "the run's agent session was granted nothing");
      } finally {
        await store.close();
      }
    });
    test("sends the task's and its workspace plan's reads beside the start, before the start answers", async () => {
      const store = await openStore(await db.fresh());
      try {
        const { runner, job } = await placedOnBox1(store, 'k');
        const seen: string[] = [];
        const tracked: Store = {
          ...store,
          runs: {
            ...store.runs,
            begin: async (params) => {
              const answer = await store.runs.begin(params);
              seen.push('runs.begin answered');
              return answer;
            },
          },
          tasks: { ...store.tasks, get: (key) => (seen.push('tasks.get'), store.tasks.get(key)) },
          workspaceTasks: {
            ...store.workspaceTasks,
            get: (key) => (seen.push('workspaceTasks.get'), store.workspaceTasks.get(key)),
          },
        };
        const options = {
          store: tracked,
          clock: systemClock,
          host: 'box-1',
          log: () => undefined,
          policy: POLICY,
          heartbeatIntervalMs: 1000,
          sessionTtlMs: 10_000,
        };
        const begun = await beginRun(options, job, { id: job.id, session: runner.id, epoch: job.epoch });
        assert.ok(begun !== null && begun.claim !== null, 'started and claimed');
        assert.deepEqual(seen, ['tasks.get', 'workspaceTasks.get', 'runs.begin answered']);
        assert.equal((await begun.reads.task)?.key, 'k');
        assert.equal((await begun.reads.plan).plan.lockMode, 'none', 'a task bound to no workspace');
        await store.sessions.end(begun.session.id);
      } finally {
        await store.close();
      }
    });
  });
}
