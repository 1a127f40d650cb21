/**
 * Job retention (docs/decisions/0039-job-retention.md): only finished jobs older than the cutoff on
 * the database clock go (moved here by the shared test clock, never slept for), with their output
 * rows, in bounded batches, under a live term only; the newest job of a task, live jobs and recent
 * ones stay, and so do the ledger's rows about the removed jobs.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobId } from '../../core/job.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, sleep, withFixture, type Fixture, type Harness } from './harness.js';

const DAY = 86_400_000;

/** `count` jobs of the task `key`, each queued and cancelled but the last, left queued (live). */
async function givenJobs(store: Store, key: string, count: number): Promise<JobId[]> {
  const ids: JobId[] = [];
  let { job } = await store.jobs.enqueue({ key });
  ids.push(job.id);
  for (let index = 1; index < count; index++) {
    assert.ok((await store.jobs.cancel({ id: job.id })).ok);
    ({ job } = await store.jobs.retry({ id: job.id }));
    ids.push(job.id);
  }
  return ids;
}

async function outputRows(fixture: Fixture, job: JobId): Promise<number> {
  const [row] = await fixture.raw.exec(
    `SELECT count(*) AS n FROM output_chunks WHERE job_id = ${fixture.param(1)}`,
    [job],
  );
  return Number(row?.['n']);
}

async function remaining(store: Store, ids: readonly JobId[]): Promise<JobId[]> {
  const found = await Promise.all(ids.map(async (id) => ((await store.jobs.get(id)) === null ? null : id)));
  return found.filter((id): id is JobId => id !== null);
}

export function exerciseRetention(harness: Harness): void {
  describe('job retention', () => {
    test('removes finished jobs older than the cutoff with their output; keeps live, recent and newest', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const old = await givenJobs(store, 'old', 3); // two cancelled, the third queued
        const runner = await givenSession(store, 'box-1');
        const running = await store.jobs.claimNext({ session: runner.id, start: true });
        assert.equal(running?.id, old[2], 'the live job runs');
        const [single] = await givenJobs(store, 'single', 1);
        assert.ok(single !== undefined && (await store.jobs.cancel({ id: single })).ok);
        await fixture.raw.exec(
          `INSERT INTO output_chunks (job_id, attempt, start_byte, epoch, bytes)
           VALUES (${fixture.param(1)}, 1, 0, 1, ${fixture.param(2)})`,
          [old[0], Buffer.from('hello')],
        );
        await fixture.moveClock(2 * DAY);
        const recent = await givenJobs(store, 'recent', 2); // one cancelled now, one queued
        const all = [...old, single, ...recent];
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 100 });
        assert.ok(pruned.ok);
        assert.equal(pruned.removed, 2);
        const now = await store.now();
        assert.ok(
          pruned.cutoff <= now - DAY && pruned.cutoff > now - DAY - 60_000,
          'the database clock less a day',
        );
        assert.deepEqual(await remaining(store, all), [old[2], single, ...recent]);
        assert.equal(await outputRows(fixture, old[0] ?? 0), 0, 'the output rows went with the job');
        const [row] = await store.audit.list({ type: 'jobs:pruned' });
        assert.equal(row?.detail['removed'], 2);
        assert.equal(row?.detail['lastId'], old[1]);
        assert.ok(
          (await store.audit.list({ jobId: old[0] })).length > 0,
          "the ledger keeps the removed job's rows",
        );
        assert.deepEqual(
          { ...(await store.retention.state()), lastAt: null },
          {
            removed: 2,
            byStatus: [{ name: 'cancelled', count: 2 }],
            maxId: old[1],
            lastCutoff: pruned.cutoff,
            lastAt: null,
          },
        );
        const again = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 100 });
        assert.deepEqual(again.ok && again.removed, 0, 'nothing more to remove');
        assert.equal(
          (await store.audit.list({ type: 'jobs:pruned' })).length,
          1,
          'no ledger row for nothing',
        );
      }));

    test('removes at most the limit per call, oldest finish first; a dry run counts and changes nothing', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const ids = await givenJobs(store, 'many', 6);
        await fixture.moveClock(2 * DAY);
        const dry = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 1, dryRun: true });
        assert.deepEqual(dry.ok && dry.removed, 5);
        assert.equal((await remaining(store, ids)).length, 6, 'a dry run removes nothing');
        const batches: number[] = [];
        for (let pass = 0; pass < 4; pass++) {
          const result = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 2 });
          assert.ok(result.ok);
          batches.push(result.removed);
          if (pass === 0) assert.deepEqual(await remaining(store, ids.slice(0, 2)), [], 'the oldest first');
        }
        assert.deepEqual(batches, [2, 2, 1, 0]);
        assert.deepEqual(await remaining(store, ids), [ids[5]]);
        assert.equal((await store.audit.list({ type: 'jobs:pruned' })).length, 3, 'one ledger row per batch');
      }));

    test('a batch starts after the cursor, looks at `scan` entries at most and says where to go on', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const [kept] = await givenJobs(store, 'kept', 1); // the newest of its task: kept, first in the index
        assert.ok(kept !== undefined && (await store.jobs.cancel({ id: kept })).ok);
        const ids = await givenJobs(store, 'many', 6); // five cancelled, the sixth queued
        await fixture.moveClock(2 * DAY);
        const job = async (index: number) => {
          const found = await store.jobs.get(ids[index] ?? 0);
          assert.ok(found?.finishedAt !== null && found?.finishedAt !== undefined);
          return { finishedAt: found.finishedAt, id: found.id };
        };
        const [second, fourth] = [await job(1), await job(3)];
        // After the second job: the first, though removable, is before the cursor and stays.
        const after = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 2, after: second });
        assert.ok(after.ok);
        assert.deepEqual([after.removed, after.last], [2, fourth]);
        assert.deepEqual(await remaining(store, ids), [ids[0], ids[1], ids[4], ids[5]]);
        const next = await store.retention.pruneJobs({
          olderThanMs: DAY,
          limit: 2,
          after: after.last ?? undefined,
        });
        assert.ok(next.ok);
        assert.deepEqual([next.removed, next.last], [1, null], 'it looked at the last entry: the end');
        // A batch looks at `scan` entries at most: the kept job alone, then the first removable.
        const head = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 2, scan: 1 });
        const keptAt = (await store.jobs.get(kept))?.finishedAt;
        assert.ok(head.ok);
        assert.deepEqual([head.removed, head.last], [0, { finishedAt: keptAt, id: kept }]);
        const one = await store.retention.pruneJobs({
          olderThanMs: DAY,
          limit: 2,
          scan: 1,
          after: head.last ?? undefined,
        });
        assert.deepEqual(one.ok && [one.removed, one.last?.id], [1, ids[0]]);
        // A new pass starts at the head: what the cursor passed over goes, the kept job stays.
        const fresh = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(fresh.ok && fresh.removed, 1);
        assert.deepEqual(await remaining(store, [kept, ...ids]), [kept, ids[5]]);
      }));

    test('the database clock decides: a job that finished within the retention stays', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const ids = await givenJobs(store, 'edge', 2);
        await fixture.moveClock(DAY - 60_000);
        const early = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(early.ok && early.removed, 0, 'a minute short of a day');
        await fixture.moveClock(120_000);
        const late = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(late.ok && late.removed, 1, 'a minute past it');
        assert.deepEqual(await remaining(store, ids), [ids[1]]);
      }));

    test('under a term, only the live term removes; a stale one is fenced and changes nothing', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const ids = await givenJobs(store, 'fenced', 3);
        const lease = await store.leases.acquire({ name: 'dispatcher', holder: 'leader', ttlMs: 10 * DAY });
        assert.ok(lease.ok);
        await fixture.moveClock(2 * DAY);
        const stale = { lease: 'dispatcher', holder: 'leader', term: lease.lease.term + 1 };
        assert.deepEqual(await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10, term: stale }), {
          ok: false,
          reason: 'fenced',
        });
        assert.equal((await remaining(store, ids)).length, 3);
        const live = { ...stale, term: lease.lease.term };
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10, term: live });
        assert.deepEqual(pruned.ok && pruned.removed, 2);
      }));

    test('never removes a job that is not over, whatever its finish time says', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const [first, live] = await givenJobs(store, 'live', 2); // first cancelled, live queued
        const [other] = await givenJobs(store, 'other', 1);
        assert.ok(other !== undefined && (await store.jobs.cancel({ id: other })).ok);
        const at = fixture.param;
        // Guards other than the state's left out of play: a newer job for the live one's task, and an
        // old finish time on the live job itself (which no transition writes).
        await fixture.raw.exec(
          `UPDATE jobs SET task_id = (SELECT task_id FROM jobs WHERE id = ${at(1)}) WHERE id = ${at(2)}`,
          [live, other],
        );
        await fixture.raw.exec(
          `UPDATE jobs SET finished_at = (SELECT finished_at FROM jobs WHERE id = ${at(1)}) WHERE id = ${at(2)}`,
          [first, live],
        );
        await fixture.moveClock(2 * DAY);
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(pruned.ok && pruned.removed, 1);
        assert.deepEqual(await remaining(store, [first ?? 0, live ?? 0, other]), [live, other]);
        assert.equal((await store.jobs.get(live ?? 0))?.status, 'queued');
      }));

    test("keeps a finished job whose session still holds its task's claim", () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const runner = await givenSession(store, 'box-1');
        const ids = await givenJobs(store, 'held', 2);
        const claimed = await store.jobs.claimNext({ session: runner.id, start: true });
        assert.equal(claimed?.id, ids[1]);
        assert.ok((await store.jobs.cancel({ id: ids[1] ?? 0 })).ok);
        // The cancelled run's session holds the task's claim still (an agent stopping).
        assert.ok((await store.claims.acquire({ key: 'held', session: runner.id })).ok);
        const retried = await store.jobs.retry({ id: ids[1] ?? 0 });
        await fixture.moveClock(2 * DAY);
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(pruned.ok && pruned.removed, 1);
        assert.deepEqual(await remaining(store, [...ids, retried.job.id]), [ids[1], retried.job.id]);
      }));
  });
  exerciseRetentionKeeps(harness);
}

/** The keep-rule for a job a workspace lock names, run tokens (which keep nothing), and the term's lock. */
function exerciseRetentionKeeps(harness: Harness): void {
  describe('job retention keeps what is still named', () => {
    test('keeps a finished job its workspace lock names until the runner releases the lock', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        const { job } = await store.jobs.enqueue({ key: 'locked' });
        assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' })).ok);
        await store.jobs.start({ id: job.id, session: runner.id, epoch: 1 });
        // A cancel of a running job leaves its lock to the runner, once the agent's tree is dead.
        assert.ok((await store.jobs.cancel({ id: job.id })).ok);
        const { job: retried } = await store.jobs.retry({ id: job.id });
        await fixture.moveClock(2 * DAY);
        assert.equal((await store.workspaceLocks.current('w'))?.jobId, job.id);
        const held = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(held.ok && held.removed, 0, 'the lock names it');
        assert.equal(
          (await store.workspaceLocks.releaseJob({ jobId: job.id, session: runner.id })).length,
          1,
        );
        const released = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(released.ok && released.removed, 1, 'released, it goes');
        assert.deepEqual(await remaining(store, [job.id, retried.id]), [retried.id]);
      }));

    test('removes a finished job an unrevoked run token names: that token already opens nothing', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const agent = await givenSession(store);
        const [named, newest] = await givenJobs(store, 'tokens', 2); // the first cancelled
        assert.ok(named !== undefined && newest !== undefined);
        // A runner killed before it revoked its run's token leaves it unrevoked and without expiry.
        const epoch = (await store.jobs.get(named))?.epoch ?? 0;
        const run = { jobId: named, jobEpoch: epoch, claimEpoch: 1 };
        const { secret } = await store.tokens.create({ scope: 'agent', session: agent.id, run });
        assert.deepEqual(
          await store.tokens.verify(secret),
          { ok: false, reason: 'ended' },
          'its run is over',
        );
        await fixture.moveClock(2 * DAY);
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(pruned.ok && pruned.removed, 1, 'the token does not keep its job');
        assert.deepEqual(await remaining(store, [named, newest]), [newest]);
        assert.deepEqual(
          await store.tokens.verify(secret),
          { ok: false, reason: 'unknown' },
          'it went with the job',
        );
      }));

    test('removes every run token of the jobs it removes, and no other token', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const agent = await givenSession(store);
        const [revoked, expired, unrevoked, newest] = await givenJobs(store, 'spent', 4); // three cancelled
        const [other] = await givenJobs(store, 'other', 1); // the newest of its task: kept
        assert.ok(
          revoked && expired && unrevoked && newest && other && (await store.jobs.cancel({ id: other })).ok,
        );
        const mint = async (id: JobId, ttlMs?: number) => {
          const epoch = (await store.jobs.get(id))?.epoch ?? 0;
          const run = { jobId: id, jobEpoch: epoch, claimEpoch: 1 };
          return (await store.tokens.create({ scope: 'agent', session: agent.id, run, ttlMs })).token.id;
        };
        const tokens = {
          revoked: await mint(revoked),
          expired: await mint(expired, DAY),
          unrevoked: await mint(unrevoked),
          other: await mint(other),
        };
        assert.ok(await store.tokens.revoke({ id: tokens.revoked }));
        assert.ok(await store.tokens.revoke({ id: tokens.other }));
        await fixture.moveClock(2 * DAY);
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 10 });
        assert.deepEqual(pruned.ok && pruned.removed, 3, 'no token keeps a finished job');
        assert.deepEqual(await remaining(store, [revoked, expired, unrevoked, other]), [other]);
        const left = await fixture.raw.exec('SELECT id FROM tokens WHERE job_id IS NOT NULL ORDER BY id');
        assert.deepEqual(
          left.map((row) => row['id']),
          [tokens.other],
          "the removed jobs' tokens went with them; a kept job's token stays",
        );
        const [row] = await store.audit.list({ type: 'jobs:pruned' });
        assert.equal(row?.detail['tokens'], 3, 'the ledger row counts them');
      }));

    test(
      'on PostgreSQL, a batch under a term waits for a takeover in flight, then is fenced',
      {
        skip: harness.name.startsWith('sqlite')
          ? "SQLite's batch is one BEGIN IMMEDIATE: no takeover commits during it"
          : false,
      },
      () =>
        withFixture(harness, async (fixture) => {
          const store = await fixture.clocked();
          const ids = await givenJobs(store, 'race', 3);
          const term = await givenLeader(store, 'leader', 10 * DAY);
          await fixture.moveClock(2 * DAY);
          await fixture.raw.exec('BEGIN');
          try {
            // Another leader's takeover of the lease, not yet committed (acquire and renew write this row).
            await fixture.raw.exec(
              "UPDATE leases SET holder = 'other', term = term + 1 WHERE name = 'dispatcher'",
            );
            let answered = false;
            const batch = store.retention
              .pruneJobs({ olderThanMs: DAY, limit: 10, term })
              .finally(() => (answered = true));
            await sleep(500);
            assert.equal(answered, false, 'the batch waits for the takeover');
            await fixture.raw.exec('COMMIT');
            assert.deepEqual(await batch, { ok: false, reason: 'fenced' });
          } finally {
            await fixture.raw.exec('ROLLBACK').catch(() => undefined);
          }
          assert.equal((await remaining(store, ids)).length, 3, 'the deposed leader removed nothing');
        }),
    );
  });
}
