/**
 * `baton job next` and `baton job finish`: a script working the queue itself. The contract: a job
 * taken is claimed and started in one step; a finish is guarded by session and epoch; a lost
 * finish exits 3 and changes nothing, unless --next took another job (exit 0: the script holds it).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../../test/support/databases.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { rawSql } from '../../test/support/raw-sql.js';

type JobJson = {
  id: number;
  key: string;
  status: string;
  epoch: number;
  attempt: number;
  exitCode: number | null;
};
type Finish = { finished: { ok: boolean; reason?: string; job: JobJson | null }; next: JobJson | null };

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: pull mode, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('takes jobs in queue order, finishes each, and takes the next in the same step', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'a', '--priority', '1');
        await cli.json(0, 'enqueue', 'b', '--priority', '2');
        const a = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
        assert.equal(a.key, 'a');
        assert.equal(a.status, 'running');
        const args = ['--session', s, '--epoch', String(a.epoch)];
        const r = await cli.json<Finish>(
          0,
          'job',
          'finish',
          String(a.id),
          ...args,
          '--exit-code',
          '0',
          '--next',
        );
        assert.equal(r.finished.ok, true);
        assert.equal(r.finished.job?.status, 'done');
        assert.equal(r.finished.job?.exitCode, 0);
        assert.equal(r.next?.key, 'b');
        assert.equal(r.next?.status, 'running');
        const b = r.next;
        assert.ok(b !== null);
        const failed = ['--epoch', String(b.epoch), '--status', 'failed', '--reason', 'tests red'];
        const last = await cli.json<Finish>(
          0,
          'job',
          'finish',
          String(b.id),
          '--session',
          s,
          ...failed,
          '--next',
        );
        assert.equal(last.finished.job?.status, 'failed');
        assert.equal(last.next, null);
        // A run taken in pull mode writes no log of Baton's: `job show` names no file for it.
        const shown = await cli.json<{ runs: { logFile: string | null }[] }>(0, 'job', 'show', String(a.id));
        assert.deepEqual(
          shown.runs.map((run) => run.logFile),
          [null],
        );
        assert.equal(await cli.json(0, 'job', 'next', '--session', s), null);
        const text = await cli.run('job', 'next', '--session', s);
        assert.equal(text.stdout, 'no job is due\n');
      });

      test('an exit code without a status judges the job as the runner would: not 0 fails it', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        const finish = async (code: string, ...status: string[]) => {
          const key = `k-${code}-${status.length}`;
          await cli.json(0, 'enqueue', key);
          const job = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
          const done = ['--session', s, '--epoch', String(job.epoch), '--exit-code', code, ...status];
          const r = await cli.json<Finish>(0, 'job', 'finish', String(job.id), ...done);
          return [r.finished.job?.status, r.finished.job?.exitCode];
        };
        assert.deepEqual(await finish('2'), ['failed', 2]);
        assert.deepEqual(await finish('0'), ['done', 0]);
        // Said outright, the status stands: a command whose exit 1 means "nothing to do".
        assert.deepEqual(await finish('1', '--status', 'done'), ['done', 1]);
      });

      test('--wait waits for the next enqueue, which hands its job over; a wait out of bounds is refused', async () => {
        const url = await db.fresh();
        const cli = cliOn(url, mode);
        const s = await cli.session();
        const raw = await rawSql(db, url);
        try {
          const none = await cli.run('job', 'next', '--session', s, '--wait', '300ms');
          assert.equal(none.stdout, 'no job came within 300ms\n', none.stderr);
          const waiting = cli.json<JobJson>(0, 'job', 'next', '--session', s, '--wait', '60s');
          for (let tries = 0; ; tries++) {
            const [row] = await raw.exec(`SELECT wait_until FROM sessions WHERE id = ${Number(s)}`);
            if (row?.['wait_until'] !== null && row?.['wait_until'] !== undefined) break;
            assert.ok(tries < 600, 'the session never said it waits');
            await sleep(50);
          }
          await cli.json(0, 'enqueue', 'a');
          const job = await waiting;
          assert.deepEqual([job.key, job.status, job.epoch], ['a', 'running', 1]);
          const [claimed] = await raw.exec("SELECT detail FROM audit_events WHERE type = 'job:claimed'");
          const detail = claimed?.['detail'];
          const parsed = (typeof detail === 'string' ? JSON.parse(detail) : detail) as Record<
            string,
            unknown
          >;
          assert.equal(parsed['handedOff'], true, 'the enqueue claimed it for the waiting session');
          // A wait that ran out left no mark: the next enqueue stays queued.
          await cli.json(0, 'enqueue', 'b');
          const b = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
          assert.deepEqual([b.key, b.epoch], ['b', 1], 'b was queued, not handed to the wait that ran out');

          for (const bad of ['10m', 'soon']) {
            const refused = await cli.run('job', 'next', '--session', s, '--wait', bad);
            assert.equal(refused.code, 2, refused.stderr);
            assert.match(refused.stderr, /^baton: --wait must be/);
          }
          const both = await cli.run('job', 'next', '--session', s, '--wait', '1s', '--batch', '2');
          assert.equal(both.code, 2, both.stderr);
        } finally {
          await raw.close();
        }
      });

      test('a lost finish exits 3 and changes nothing; with --next it still hands over the job it took', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'a', '--priority', '1');
        await cli.json(0, 'enqueue', 'b', '--priority', '2');
        const a = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
        const stale = ['--session', s, '--epoch', String(a.epoch + 1)];
        const refused = await cli.run('job', 'finish', String(a.id), ...stale);
        assert.equal(refused.code, 3, refused.stderr);
        assert.match(refused.stderr, /^baton: job \d+ moved on: it is running at epoch 1/);
        assert.equal((await cli.json<JobJson>(0, 'job', 'show', String(a.id))).status, 'running');
        const r = await cli.json<Finish>(0, 'job', 'finish', String(a.id), ...stale, '--next');
        assert.equal(r.finished.ok, false);
        assert.equal(r.finished.reason, 'lost');
        assert.equal(r.next?.key, 'b', 'the job taken is handed over, not dropped');
      });

      test('bad input changes nothing: exit 2 with one line; an ended session exits 3', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'a');
        const a = await cli.json<JobJson>(0, 'job', 'next', '--session', s);
        const guard = ['--session', s, '--epoch', String(a.epoch)];
        for (const bad of [
          ['--status', 'oom_killed'],
          ['--exit-code', '300'],
          ['--reason', 'x'.repeat(501)],
        ]) {
          const r = await cli.run('job', 'finish', String(a.id), ...guard, ...bad);
          assert.equal(r.code, 2, `${bad.join(' ')}: ${r.stderr}`);
          assert.equal(r.stderr.trim().split('\n').length, 1);
        }
        assert.equal((await cli.json<JobJson>(0, 'job', 'show', String(a.id))).status, 'running');
        assert.equal((await cli.run('session', 'end', s)).code, 0);
        const fenced = await cli.run('job', 'next', '--session', s);
        assert.equal(fenced.code, 3, fenced.stderr);
      });
    });
  }
