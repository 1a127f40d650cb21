/**
 * stats()' running counts (docs/decisions/0040): a store keeps counts of the rows it has read once
 * and reads only what came after, so each step here compares its figures with the rows themselves.
 * The pauses let PostgreSQL's horizons settle (a store looks at most every 250 ms), so the later
 * reads go through the kept counts on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GENESIS_HASH, type Checkpoint } from '../../core/ledger.js';
import type { AuditEntry } from '../../core/audit-event.js';
import type { Task } from '../../core/task.js';
import { givenSession, givenTask, sleep, withFixture, type Fixture, type Harness } from './harness.js';

const SETTLE_MS = 300;

const isStart = (entry: AuditEntry): boolean =>
  entry.type === 'job:started' || (entry.type === 'job:claimed' && entry.detail['started'] === true);

const byName = (list: readonly { name: string; count: number }[]): Record<string, number> =>
  Object.fromEntries(list.filter((group) => group.count > 0).map((group) => [group.name, group.count]));

/** The figures stats() must give, counted from the rows themselves. */
async function truth({ store, raw }: Fixture) {
  const rows = (sql: string) => raw.exec(sql);
  const group = async (sql: string) =>
    byName((await rows(sql)).map((row) => ({ name: String(row['name']), count: Number(row['count']) })));
  const claims = (await rows(`SELECT count(*) AS granted, count(released_at) AS ended FROM claims`))[0] ?? {
    granted: 0,
    ended: 0,
  };
  return {
    jobsByStatus: await group('SELECT status AS name, count(*) AS count FROM jobs GROUP BY status'),
    claimsByOutcome: await group(
      'SELECT outcome AS name, count(*) AS count FROM claims WHERE outcome IS NOT NULL GROUP BY outcome',
    ),
    claimsGranted: Number(claims['granted']),
    claimsHeld: Number(claims['granted']) - Number(claims['ended']),
    jobsStarted: (await store.audit.list({ limit: 10_000 })).filter(isStart).length,
    jobsTimedOut: await timedOutBy(store),
    tasksByState: tasksOf((await store.observe.tasksPage({ limit: 10_000 })).map((row) => row.task)),
  };
}

/** `job:timed_out` rows by who judged them (`unrecorded`: a row that does not say). */
async function timedOutBy(store: Fixture['store']): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const row of await store.audit.list({ type: 'job:timed_out', limit: 10_000 })) {
    const said = row.detail['by'];
    const by = typeof said === 'string' ? said : 'unrecorded';
    counts[by] = (counts[by] ?? 0) + 1;
  }
  return counts;
}

/** Tasks by state as stats gives them, counted from the tasks. */
function tasksOf(tasks: readonly Task[]) {
  const by = new Map<string, { name: string; count: number; gated: number; oldestAt: number }>();
  for (const task of tasks) {
    const was = by.get(task.state) ?? { name: task.state, count: 0, gated: 0, oldestAt: task.stateAt };
    by.set(task.state, {
      name: task.state,
      count: was.count + 1,
      gated: was.gated + (task.gate === null ? 0 : 1),
      oldestAt: Math.min(was.oldestAt, task.stateAt),
    });
  }
  return [...by.values()].sort((one, other) => one.name.localeCompare(other.name));
}

/** Reads stats twice, a settle apart, and compares both with the rows. */
export async function exact(fixture: Fixture, what: string, store = fixture.store): Promise<void> {
  for (const pass of [1, 2]) {
    await sleep(SETTLE_MS);
    const stats = await store.observe.stats();
    assert.deepEqual(
      {
        jobsByStatus: byName(stats.jobsByStatus),
        claimsByOutcome: byName(stats.claimsByOutcome),
        claimsGranted: stats.claimsGranted,
        claimsHeld: stats.claimsHeld,
        jobsStarted: stats.jobsStarted,
        jobsTimedOut: byName(stats.jobsTimedOut),
        tasksByState: stats.tasksByState,
      },
      await truth(fixture),
      `${what} (read ${pass})`,
    );
  }
}

/** Prunes the ledger through its first started row: a seal over those rows, then the prune record. */
async function pruneThroughFirstStart(fixture: Fixture): Promise<void> {
  const rows = await fixture.store.audit.list({ limit: 10_000 });
  const first = rows[0]?.id ?? 1;
  const through = rows.find(isStart)?.id;
  assert.ok(through !== undefined, 'a started row to prune');
  const seal: Checkpoint = {
    kind: 'seal',
    seq: 1,
    firstId: first,
    lastId: through,
    rowCount: through - first + 1,
    root: 'r'.repeat(64),
    prevHash: GENESIS_HASH,
    hash: 'h'.repeat(64),
    keyId: 'k'.repeat(16),
    signature: 'sig',
    sealedAt: 1_700_000_000_000,
    throughSeq: null,
  };
  assert.ok(await fixture.store.ledger.append(seal, new Uint8Array(80)));
  const prune = {
    ...seal,
    seq: 2,
    kind: 'prune' as const,
    root: seal.hash,
    prevHash: seal.hash,
    hash: 'p'.repeat(64),
  };
  assert.ok((await fixture.store.ledger.prune({ ...prune, throughSeq: 1 })) !== null);
}

export function exerciseObserveTotals(harness: Harness): void {
  describe("stats' running counts", () => {
    test('stay exact when two reads of one store run at once past the kept counts', () =>
      withFixture(harness, async (fixture) => {
        const { store } = fixture;
        for (const key of ['a', 'b']) await store.jobs.enqueue({ key });
        await exact(fixture, 'two queued jobs');
        const worker = await givenSession(store);
        for (const key of ['c', 'd', 'e']) await store.jobs.enqueue({ key });
        assert.ok((await store.jobs.claimNext({ session: worker.id, start: true })) !== null);
        await sleep(SETTLE_MS);
        await Promise.all([store.observe.stats(), store.observe.stats(), store.observe.stats()]);
        await exact(fixture, 'after three reads at once');
      }));

    test('stay exact past the kept counts as live rows end, tasks reopen, rows go and the ledger is pruned', () =>
      withFixture(harness, async (fixture) => {
        const { store, raw, param } = fixture;
        const worker = await givenSession(store);
        const jobs = [];
        for (const key of ['a', 'b', 'c']) jobs.push((await store.jobs.enqueue({ key })).job);
        for (const key of ['x', 'y']) {
          await givenTask(store, key);
          assert.ok((await store.claims.acquire({ key, session: worker.id })).ok);
        }
        await exact(fixture, 'queued jobs and held claims');
        assert.ok((await store.jobs.claimNext({ session: worker.id, start: true })) !== null);
        assert.equal((await store.jobs.cancel({ id: jobs[1]?.id ?? 0, reason: 'not needed' })).ok, true);
        assert.ok(
          (await store.claims.release({ key: 'x', session: worker.id, epoch: 1, outcome: 'released' })).ok,
        );
        await store.jobs.enqueue({ key: 'd' });
        await exact(fixture, 'a job started, one cancelled, a claim released, a job added');
        await raw.exec(`DELETE FROM jobs WHERE id = ${param(1)}`, [jobs[1]?.id]);
        await raw.exec(`DELETE FROM claims WHERE released_at IS NOT NULL`);
        await exact(fixture, 'an ended job and an ended claim deleted');
        const by = { name: 'ops' };
        await store.lifecycle.transition({ key: 'x', action: 'complete', by });
        await store.lifecycle.gate({ key: 'c', gate: 'design', by });
        await exact(fixture, 'a task done, one gated');
        await store.lifecycle.transition({ key: 'x', action: 'reopen', by });
        await exact(fixture, 'a done task reopened');
        await pruneThroughFirstStart(fixture);
        await exact(fixture, 'the ledger pruned through a started row');
      }));

    test('count runs timed out by who judged them; a kept row of the older counts is not taken up', () =>
      withFixture(harness, async (fixture) => {
        const { raw, param } = fixture;
        const store = await fixture.clocked();
        const worker = await givenSession(store);
        for (const key of ['run', 'finish', 'swept']) await store.jobs.enqueue({ key, timeLimitMs: 1_000 });
        const jobs = [];
        for (let index = 0; index < 3; index++)
          jobs.push(await store.jobs.claimNext({ session: worker.id, start: true }));
        const [run, finish, swept] = jobs;
        assert.ok(run && finish && swept);
        // A kept row as the code before migration 0045 wrote it: starts alone, through past every row.
        const [top] = await raw.exec(
          'SELECT coalesce(max(id), 0) + 1 AS top, coalesce(min(id), 0) AS low FROM audit_events',
        );
        await raw.exec(
          `INSERT INTO stats_kept (tbl, through, mark, seen, counts, mins, pending)
           VALUES ('audit_events', ${param(1)}, ${param(2)}, 0, '[["started",1000]]', '[]', '[]')`,
          [Number(top?.['top']) + 1000, Number(top?.['low'])],
        );
        await fixture.moveClock(2_000);
        const guard = (job: typeof run) => ({ id: job.id, session: worker.id, epoch: job.epoch });
        assert.ok((await store.progress.markTimedOut({ ...guard(run), defaultLimitMs: null })).timedOut);
        assert.ok((await store.progress.failTimedOut({ ...guard(finish), status: 'done' })).timedOut);
        // The sweep fails `run` too (a pull job, audited already: no second row) and `swept`.
        assert.equal(
          (await store.progress.sweepTimedOut({ max: 10, leaderSession: worker.id })).failed.length,
          2,
        );
        // A row written before the rows said who judged them.
        await raw.exec(
          `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
          SELECT at, type, task_key, job_id, session_id, host, epoch, '{}' FROM audit_events
          WHERE type = 'job:timed_out' AND job_id = ${param(1)}`,
          [run.id],
        );
        await exact(fixture, 'one of each', store);
        assert.deepEqual(
          (await store.observe.stats()).jobsTimedOut,
          ['finish', 'leader', 'runner', 'unrecorded'].map((name) => ({ name, count: 1 })),
        );
        // Another store starts from the counts this one kept, and reads on past them.
        const another = await fixture.openAnother();
        try {
          await store.jobs.enqueue({ key: 'late', timeLimitMs: 1_000 });
          const late = await store.jobs.claimNext({ session: worker.id, start: true });
          assert.ok(late !== null);
          await fixture.moveClock(2_000);
          assert.ok((await store.progress.failTimedOut({ ...guard(late), status: 'done' })).timedOut);
          await exact(fixture, 'another store, after one more', another);
        } finally {
          await another.close();
        }
      }));
  });
}
