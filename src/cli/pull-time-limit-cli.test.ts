/**
 * A job's own time limit holds in pull mode too (decision 0037): `baton job finish` of a job past
 * its limit, judged on the database clock, fails it `timed out` and exits 3 with one line; within
 * its limit, or without one, the finish is as before. Real databases, the real `baton` command.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { bothEngines } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { openStore } from '../store/open.js';

type JobJson = { id: number; key: string; status: string; epoch: number; reason: string | null };
type Finish = { finished: { ok: boolean; job: JobJson | null }; next: JobJson | null };
type Row = { type: string; detail: Record<string, unknown> };

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: pull mode under a time limit, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('a finish past the limit fails the job timed out, exit 3; one within it or with none is done', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'slow', '--time-limit', '1s', '--priority', '1');
        await cli.json(0, 'enqueue', 'quick', '--time-limit', '1h', '--priority', '2');
        await cli.json(0, 'enqueue', 'plain', '--priority', '3');
        const slow = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
        assert.equal(slow.key, 'slow');
        await sleep(1_200);
        const refused = await cli.run(
          'job',
          'finish',
          String(slow.id),
          '--session',
          s,
          '--epoch',
          String(slow.epoch),
        );
        assert.equal(refused.code, 3, refused.stderr);
        const lines = refused.stderr.split('\n').filter((line) => line !== '');
        assert.equal(lines.length, 1, refused.stderr);
        assert.match(
          lines[0] ?? '',
          /^baton: job \d+ timed out: ran past its time limit of 1 s \(started \d{4}-.*\): it is failed, not done/,
        );
        const shown = await cli.json<JobJson>(0, 'job', 'show', String(slow.id));
        assert.equal(shown.status, 'failed');
        assert.match(
          shown.reason ?? '',
          /^timed out: ran past its time limit of 1 s .*; the worker said done$/,
        );
        const rows = await cli.json<Row[]>(0, 'audit', '--job', String(slow.id));
        assert.deepEqual(
          rows.slice(-2).map((row) => row.type),
          ['job:timed_out', 'job:finished'],
        );
        assert.equal(rows.at(-2)?.detail['own'], true);
        // Within its limit, and without one: finished as the worker says, the next taken in the same step.
        for (const key of ['quick', 'plain']) {
          const job = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
          assert.equal(job.key, key);
          const done = await cli.json<Finish>(
            0,
            'job',
            'finish',
            String(job.id),
            '--session',
            s,
            '--epoch',
            String(job.epoch),
          );
          assert.equal(done.finished.job?.status, 'done');
        }
      });

      test("a worker's failure past the limit: worded failed timed out, its reason kept after", async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'slow', '--time-limit', '1s');
        const slow = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
        await sleep(1_200);
        const guard = ['--session', s, '--epoch', String(slow.epoch)];
        const refused = await cli.run(
          'job',
          'finish',
          String(slow.id),
          ...guard,
          '--status',
          'failed',
          '--reason',
          'boom',
        );
        assert.equal(refused.code, 3, refused.stderr);
        const lines = refused.stderr.split('\n').filter((line) => line !== '');
        assert.equal(lines.length, 1, refused.stderr);
        assert.match(lines[0] ?? '', /: it is failed as timed out, the worker's failure kept in its reason/);
        assert.doesNotMatch(lines[0] ?? '', /not failed/);
        const shown = await cli.json<JobJson>(0, 'job', 'show', String(slow.id));
        assert.equal(shown.status, 'failed');
        assert.match(
          shown.reason ?? '',
          /^timed out: ran past its time limit of 1 s .*; the worker said failed: boom$/,
        );
      });

      test('a batch member past its limit: timedOut in the JSON, [timed out] in the text; no other', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        for (const [key, limit] of [
          ['slow', '1s'],
          ['quick', '1h'],
          ['slow2', '1s'],
        ] as const)
          await cli.json(0, 'enqueue', key, '--time-limit', limit);
        await cli.json(0, 'enqueue', 'plain');
        type Taken = { jobs: JobJson[] };
        const taken = await cli.json<Taken>(0, 'job', 'next', '--session', s, '--batch', '4');
        assert.deepEqual(
          taken.jobs.map((job) => job.key),
          ['slow', 'quick', 'slow2', 'plain'],
        );
        await sleep(1_200);
        const members = (keys: string[]) =>
          taken.jobs.filter((job) => keys.includes(job.key)).map((job) => `${job.id}:${job.epoch}`);
        type Member = { ok: boolean; job: JobJson; timedOut?: boolean };
        const answer = await cli.json<{ finished: Member[] }>(
          0,
          'job',
          'finish-batch',
          '--session',
          s,
          ...members(['slow', 'quick']),
        );
        assert.deepEqual(
          answer.finished.map((member) => [member.job.key, member.ok, member.job.status, member.timedOut]),
          [
            ['slow', true, 'failed', true],
            ['quick', true, 'done', undefined],
          ],
        );
        assert.ok(!('timedOut' in (answer.finished[1] ?? {})), 'no timedOut field on the others');
        const text = await cli.run('job', 'finish-batch', '--session', s, ...members(['slow2', 'plain']));
        assert.equal(text.code, 0, text.stderr);
        const [timedOut, plain, ...rest] = text.stdout.split('\n').filter((line) => line !== '');
        assert.deepEqual(rest, []);
        assert.match(timedOut ?? '', /^finished job \d+ failed .* — timed out: ran past .* \[timed out\]$/);
        assert.match(plain ?? '', /^finished job \d+ done /);
        assert.doesNotMatch(plain ?? '', /timed out/);
      });

      test("a batch member the leader's sweep failed: the time-limit line, as a single finish gives it", async () => {
        const url = await db.fresh();
        const cli = cliOn(url, mode);
        const s = await cli.session();
        const limits = [
          ['slow', '1s'],
          ['slow2', '1s'],
          ['slow3', '1s'],
          ['quick', '1h'],
          ['quick2', '1h'],
        ] as const;
        for (const [key, limit] of limits) await cli.json(0, 'enqueue', key, '--time-limit', limit);
        const taken = await cli.json<{ jobs: JobJson[] }>(0, 'job', 'next', '--session', s, '--batch', '5');
        const member = (key: string) => {
          const job = taken.jobs.find((one) => one.key === key);
          assert.ok(job !== undefined, key);
          return `${job.id}:${job.epoch}`;
        };
        await sleep(1_200);
        // The leading `baton up`'s sweep, on the same database.
        const store = await openStore(url);
        try {
          const leader = await store.sessions.start({ kind: 'daemon', host: 'lead', pid: 1 });
          assert.equal(
            (await store.progress.sweepTimedOut({ max: 10, leaderSession: leader.id })).failed.length,
            3,
          );
        } finally {
          await store.close();
        }
        const line = (key: string) =>
          new RegExp(
            `^job ${member(key).split(':')[0]} timed out: ran past its time limit of 1 s \\(started \\d{4}-[^)]*\\): ` +
              'the leader failed it before this finish came: it is failed, not done',
          );
        type Member = { ok: boolean; reason?: string; job: JobJson; timedOut?: boolean; message?: string };
        type Refused = { error: string; message: string; finished: Member[] };
        const refused = await cli.json<Refused>(
          3,
          'job',
          'finish-batch',
          '--session',
          s,
          member('slow'),
          member('quick'),
        );
        assert.equal(refused.error, 'lost');
        assert.match(refused.message, line('slow'));
        assert.match(refused.message, /; 1 of 2 finished$/);
        const [swept, quick] = refused.finished;
        assert.deepEqual(
          [swept?.ok, swept?.reason, swept?.timedOut, swept?.job.status],
          [false, 'lost', true, 'failed'],
        );
        assert.match(swept?.message ?? '', line('slow'));
        assert.deepEqual([quick?.ok, quick?.job.status, 'timedOut' in (quick ?? {})], [true, 'done', false]);
        const text = await cli.run('job', 'finish-batch', '--session', s, member('slow2'), member('quick2'));
        assert.equal(text.code, 3, text.stderr);
        const lines = text.stderr.split('\n').filter((one) => one !== '');
        assert.equal(lines.length, 1, text.stderr);
        assert.match((lines[0] ?? '').replace(/^baton: /, ''), line('slow2'));
        // With jobs taken in the same commit it exits 0, and the member's line says why it was not finished.
        await cli.json(0, 'enqueue', 'more');
        const next = await cli.run('job', 'finish-batch', '--session', s, member('slow3'), '--next', '1');
        assert.equal(next.code, 0, next.stderr);
        assert.match(next.stdout.split('\n')[0] ?? '', line('slow3'));
      });
    });
  }
