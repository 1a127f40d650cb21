/**
 * `baton job show` after an agent was killed: the job row keeps only its latest run, so the job
 * used to show `attempt 2/3` with nothing about the first run, its pid, why it ended, or where its
 * output went. It now lists every run from the ledger, with its host, pid, outcome and reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../support/databases.js';
import { clusterFixture, killFirstRunAwaitRerun } from './cluster-support.js';

test('baton job show lists each run of a job whose agent was SIGKILLed, and why each ended', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    const { job } = await c.store.jobs.enqueue({
      key: 'k',
      command: 'test "$BATON_ATTEMPT" -gt 1 || exec sleep 60',
    });
    c.up('solo');
    const pid = await killFirstRunAwaitRerun(c.store, job.id, 'k');
    const shown = await c.baton('job', 'show', String(job.id));
    assert.equal(shown.code, 0, shown.stderr);
    const lines = shown.stdout.split('\n');
    const runs = lines.slice(lines.indexOf('  runs:') + 1);
    assert.match(
      runs[0] ?? '',
      new RegExp(`attempt 1 on solo at .*, agent pid ${pid}: requeued — agent killed by SIGKILL`),
    );
    assert.match(runs[1] ?? '', /attempt 2 on solo at .*, agent pid \d+: done, exit 0$/);
    assert.match(runs[2] ?? '', new RegExp(`output: \\.baton/logs/job-${job.id}-attempt-<n>\\.log where`));
    const json = JSON.parse((await c.baton('job', 'show', String(job.id), '--json')).stdout) as {
      runs: { attempt: number; outcome: string; reason: string | null; logFile: string | null }[];
    };
    // Each run's log, by name, in the log folder of the `baton up` of its host.
    assert.deepEqual(
      json.runs.map((run) => run.logFile),
      [`job-${job.id}-attempt-1.log`, `job-${job.id}-attempt-2.log`],
    );
    assert.deepEqual(
      json.runs.map((run) => [run.attempt, run.outcome]),
      [
        [1, 'requeued'],
        [2, 'done'],
      ],
    );
  } finally {
    await c.close();
  }
});
