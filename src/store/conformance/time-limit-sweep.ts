/**
 * The leader's time-limit sweep (decision 0037, "The leader's sweep"): progress.sweepTimedOut
 * fails the running jobs past their own limit that no runner judges, each with its `job:timed_out`
 * row (once per epoch) and its failing finish, leaving the claim and the task as a pull finish past
 * its limit does, both rows naming the leader's session; jobs within their limit, without one, or
 * placed on a runner are left alone, whatever the kind of the session that took a pull job.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, ledgerTypes, withFixture, type Harness } from './harness.js';

/** A leading `baton up`'s session, whose id the sweep's rows carry (`bySession`). */
const LEADER = 999;

async function claimOutcomes(store: Store, key: string): Promise<(string | null)[]> {
  return (await store.claims.history(key)).map((claim) => claim.outcome);
}

export function exerciseTimeLimitSweep(harness: Harness): void {
  describe('time-limit sweep', () => {
    test('fails a pull-held job past its own limit with both rows; within, none and the finished left', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const worker = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'short', timeLimitMs: 60_000 });
        await store.jobs.enqueue({ key: 'plain' });
        await store.jobs.enqueue({ key: 'long', timeLimitMs: 3_600_000 });
        await store.jobs.enqueue({ key: 'finisher', timeLimitMs: 60_000 });
        const taken = [];
        for (let index = 0; index < 4; index++)
          taken.push(await store.jobs.claimNext({ session: worker.id, start: true }));
        const [short, plain, long, finisher] = taken;
        assert.ok(short && plain && long && finisher);
        assert.deepEqual(
          await store.progress.sweepTimedOut({ max: 100, leaderSession: LEADER }),
          { failed: [] },
          'all within',
        );
        await moveClock(61_000);
        // The same kind of job, finished by its worker past the limit: what the sweep must match.
        const said = { id: finisher.id, session: worker.id, epoch: finisher.epoch, status: 'done' as const };
        assert.ok((await store.progress.failTimedOut(said)).timedOut);
        const { failed } = await store.progress.sweepTimedOut({ max: 100, leaderSession: LEADER });
        assert.deepEqual(
          failed.map((job) => [job.id, job.status]),
          [[short.id, 'failed']],
        );
        const job = failed[0];
        const started = new Date(short.startedAt ?? 0).toISOString();
        assert.equal(
          job?.reason,
          `timed out: ran past its time limit of 60 s (started ${started}); ` +
            'its worker had not finished it, the leader failed it',
        );
        assert.deepEqual(await store.jobs.get(short.id), job);
        const ledger = ['job:enqueued', 'job:claimed', 'job:timed_out', 'job:finished'];
        assert.deepEqual(await ledgerTypes(store, short.id), ledger);
        const [row] = await store.audit.list({ jobId: short.id, type: 'job:timed_out' });
        assert.deepEqual(
          [row?.epoch, row?.session, row?.detail['limitMs'], row?.detail['own']],
          [short.epoch, worker.id, 60_000, true],
        );
        // Both rows stay the holder's (its epoch, its session) and say the leader judged and failed it.
        assert.deepEqual([row?.detail['by'], row?.detail['bySession']], ['leader', LEADER]);
        const [finished] = await store.audit.list({ jobId: short.id, type: 'job:finished' });
        assert.deepEqual(
          [
            finished?.session,
            finished?.detail['status'],
            finished?.detail['by'],
            finished?.detail['bySession'],
          ],
          [worker.id, 'failed', 'leader', LEADER],
        );
        // The worker's own finish past the limit says so too, and names no leader.
        const [own] = await store.audit.list({ jobId: finisher.id, type: 'job:timed_out' });
        assert.deepEqual([own?.detail['by'], own?.detail['bySession']], ['finish', undefined]);
        const [ownFinished] = await store.audit.list({ jobId: finisher.id, type: 'job:finished' });
        assert.equal(ownFinished?.detail['by'], undefined);
        // Claim and task as the worker's own finish past the limit left them.
        assert.deepEqual(await claimOutcomes(store, 'short'), await claimOutcomes(store, 'finisher'));
        assert.equal((await store.tasks.get('short'))?.state, (await store.tasks.get('finisher'))?.state);
        for (const other of [plain, long]) {
          assert.equal((await store.jobs.get(other.id))?.status, 'running', `${other.key} runs on`);
          assert.deepEqual(await ledgerTypes(store, other.id), ['job:enqueued', 'job:claimed']);
        }
        // The worker's late finish under its old epoch is lost; a second sweep finds nothing.
        const late = await store.jobs.finish({
          id: short.id,
          session: worker.id,
          epoch: short.epoch,
          status: 'done',
        });
        assert.equal(late.ok, false);
        assert.deepEqual(await store.progress.sweepTimedOut({ max: 100, leaderSession: LEADER }), {
          failed: [],
        });
        assert.deepEqual(await ledgerTypes(store, short.id), ledger);
      }));

    test("a placed job is its runner's to judge; a pull job is swept whatever its session's kind", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { session: runner } = await givenHost(store, 'box-1');
        const term = await givenLeader(store);
        const { job: placed } = await store.jobs.enqueue({ key: 'run', timeLimitMs: 1_000 });
        const claimed = await store.dispatch.place({ id: placed.id, host: 'box-1', term });
        assert.ok(claimed.ok);
        const run = await store.jobs.start({ id: placed.id, session: runner.id, epoch: claimed.job.epoch });
        assert.ok(run.ok);
        // A pull worker whose session says `daemon` (`baton session start --kind daemon`), and one
        // that says `agent`: neither is a runner, both took their jobs in pull mode.
        const daemonKind = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 2 });
        const worker = await givenSession(store, 'box-3');
        const pulled = [];
        for (const [key, session] of [
          ['pulled-daemon', daemonKind],
          ['pulled', worker],
        ] as const) {
          await store.jobs.enqueue({ key, timeLimitMs: 1_000 });
          const job = await store.jobs.claimNext({ session: session.id, start: true });
          assert.ok(job !== null);
          pulled.push([job, session] as const);
        }
        await moveClock(2_000);
        for (const [job, session] of [[run.job, runner], ...pulled] as const) {
          const guard = { id: job.id, session: session.id, epoch: job.epoch, defaultLimitMs: null };
          assert.ok((await store.progress.markTimedOut(guard)).timedOut);
        }
        const { failed } = await store.progress.sweepTimedOut({ max: 100, leaderSession: LEADER });
        assert.deepEqual(
          failed.map((job) => job.id).sort((one, other) => one - other),
          pulled.map(([job]) => job.id).sort((one, other) => one - other),
        );
        assert.equal(
          (await store.jobs.get(run.job.id))?.status,
          'running',
          "left to its runner's own verdict",
        );
        assert.deepEqual((await ledgerTypes(store, run.job.id)).slice(-2), ['job:started', 'job:timed_out']);
        const [runnerRow] = await store.audit.list({ jobId: run.job.id, type: 'job:timed_out' });
        assert.equal(runnerRow?.detail['by'], 'runner', "the runner's own verdict says so");
        for (const [job] of pulled) {
          const rows = await store.audit.list({ jobId: job.id, type: 'job:timed_out' });
          assert.equal(rows.length, 1, 'an epoch audited already is not audited twice');
          assert.deepEqual((await ledgerTypes(store, job.id)).slice(-2), ['job:timed_out', 'job:finished']);
        }
      }));

    test('a job handed to a waiting session is not swept until that session has taken it', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const worker = await clocked(); // the waiting `job next --wait`'s own store
        const session = await givenSession(worker, 'box-1');
        assert.equal(await worker.jobs.claimNext({ session: session.id, start: true, waitMs: 60_000 }), null);
        const { job } = await store.jobs.enqueue({ key: 'handed', timeLimitMs: 1_000 });
        assert.deepEqual([job.status, job.session], ['running', session.id], 'handed off at enqueue');
        await moveClock(2_000);
        // Not taken (the wait was cut off, say): its next claim takes it back under a new epoch.
        assert.deepEqual(await store.progress.sweepTimedOut({ max: 100, leaderSession: LEADER }), {
          failed: [],
        });
        assert.equal((await store.jobs.get(job.id))?.status, 'running');
        const taken = await worker.jobs.claimNext({ session: session.id, start: true, waitMs: 60_000 });
        assert.equal(taken?.id, job.id);
        const { failed } = await store.progress.sweepTimedOut({ max: 100, leaderSession: LEADER });
        assert.deepEqual(
          failed.map((swept) => swept.id),
          [job.id],
          "taken, it is its worker's, and past its limit",
        );
      }));

    test('a batch of at most max, oldest start first; the rest at the next', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const worker = await givenSession(store, 'box-1');
        const ids: number[] = [];
        for (let index = 0; index < 3; index++) {
          await store.jobs.enqueue({ key: `j${index}`, timeLimitMs: 1_000 });
          ids.push((await store.jobs.claimNext({ session: worker.id, start: true }))?.id ?? 0);
          await moveClock(10);
        }
        await moveClock(1_000);
        const first = await store.progress.sweepTimedOut({ max: 2, leaderSession: LEADER });
        const second = await store.progress.sweepTimedOut({ max: 2, leaderSession: LEADER });
        assert.deepEqual(
          [first.failed.map((job) => job.id), second.failed.map((job) => job.id)],
          [ids.slice(0, 2), ids.slice(2)],
        );
      }));
  });
}
