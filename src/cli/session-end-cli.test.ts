/**
 * `baton session end` gives back the jobs the session took in pull mode (`job next`, `--batch`)
 * at once: another worker takes them in the next call, not a lease later, and the old holder's
 * late finish is refused (exit 3). The answer names them: on its human line and in --json's
 * jobsRequeued.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';

type JobJson = { id: number; key: string; status: string; epoch: number; attempt: number };
type EndJson = { id: number; state: string; ended: boolean; jobsRequeued: number[] };

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: session end, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('gives back the pull jobs it held, at once and fenced', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'a', '--priority', '1', '--attempts', '1');
        await cli.json(0, 'enqueue', 'b', '--priority', '2', '--attempts', '1');
        const a = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
        const batch = await cli.json<{ jobs: JobJson[] }>(0, 'job', 'next', '--session', s, '--batch', '1');
        assert.deepEqual([a.key, ...batch.jobs.map((job) => job.key)], ['a', 'b']);
        assert.equal(await cli.json(0, 'job', 'next', '--session', s), null, 'both are held');
        const ended = await cli.run('session', 'end', s);
        assert.equal(ended.code, 0, ended.stderr);
        assert.equal(
          ended.stdout.trim(),
          `ended session ${s}; queued jobs ${a.id}, ${batch.jobs[0]?.id} again`,
        );
        const other = await cli.session();
        const again = await cli.json<JobJson>(0, 'job', 'next', '--session', other);
        assert.deepEqual([again.key, again.epoch, again.attempt], ['a', a.epoch + 1, 1]);
        const late = await cli.run('job', 'finish', String(a.id), '--session', s, '--epoch', String(a.epoch));
        assert.equal(late.code, 3, `the old holder is fenced: ${late.stdout}${late.stderr}`);
        const next = await cli.json<{ jobs: JobJson[] }>(
          0,
          'job',
          'next',
          '--session',
          other,
          '--batch',
          '1',
        );
        assert.deepEqual(
          next.jobs.map((job) => [job.key, job.attempt]),
          [['b', 1]],
        );
        const answer = await cli.json<EndJson>(0, 'session', 'end', other);
        assert.deepEqual(
          [answer.id, answer.state, answer.ended, answer.jobsRequeued],
          [Number(other), 'ended', true, [a.id, next.jobs[0]?.id]],
        );
        const twice = await cli.json<EndJson>(0, 'session', 'end', other);
        assert.deepEqual(
          [twice.ended, twice.jobsRequeued],
          [false, []],
          'an ended session gives back nothing',
        );
      });
    });
  }
