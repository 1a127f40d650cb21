/**
 * `baton job next --batch N` and `baton job finish-batch`, with --db and over HTTP (the same text,
 * --json and exit codes). The contract: a batch is taken in one step, each job under its own
 * epoch; a finish-batch finishes each member under its own epoch, and a member that moved on
 * (cancelled, or named with a stale epoch) is reported as lost while the others finish; with no
 * job taken that exits 3, with jobs taken 0. Bad batch input is one line, exit 2, and changes
 * nothing.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { assertOneErrorLine } from '../../test/support/cli-suite.js';

type JobJson = { id: number; key: string; status: string; epoch: number };
type Taken = { jobs: JobJson[]; leaseUntil: string | null };
type Member = { ok: boolean; reason?: string; job: JobJson | null };
type Finished = Taken & { finished: Member[] };

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: pull mode in batches, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('takes a batch in queue order and finishes it with the next; a fenced-off member fails alone', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        for (const [key, priority] of [
          ['a', '1'],
          ['b', '2'],
          ['c', '3'],
          ['d', '4'],
        ] as const)
          await cli.json(0, 'enqueue', key, '--priority', priority);
        const batch = await cli.json<Taken>(
          0,
          'job',
          'next',
          '--session',
          s,
          '--batch',
          '3',
          '--lease',
          '5m',
        );
        assert.deepEqual(
          batch.jobs.map((j) => [j.key, j.status]),
          [
            ['a', 'running'],
            ['b', 'running'],
            ['c', 'running'],
          ],
        );
        assert.match(batch.leaseUntil ?? '', /^\d{4}-\d\d-\d\dT/);
        const [a, b, c] = batch.jobs;
        assert.ok(a !== undefined && b !== undefined && c !== undefined);
        // b is cancelled by an operator; c is named with an epoch that is not its own.
        assert.equal((await cli.run('cancel', String(b.id))).code, 0);
        const members = [`${a.id}:${a.epoch}`, `${b.id}:${b.epoch}`, `${c.id}:${c.epoch + 1}:failed`];

        const lost = await cli.run('job', 'finish-batch', '--session', s, ...members);
        const line = assertOneErrorLine(lost, 3, 'finish-batch with two fenced members');
        assert.match(line, new RegExp(`2 of 3 jobs moved on \\(${members[1]} ${members[2]}\\); 1 finished`));
        const shown = await cli.json<JobJson[]>(0, 'queue', 'list');
        const status = (id: number) => shown.find((j) => j.id === id)?.status;
        assert.deepEqual([status(a.id), status(b.id), status(c.id)], ['done', 'cancelled', 'running']);

        // With --next the stale member is still reported, per member, and the next batch is handed over.
        const r = await cli.json<Finished>(
          0,
          'job',
          'finish-batch',
          '--session',
          s,
          `${c.id}:${c.epoch + 1}`,
          '--next',
          '5',
        );
        assert.deepEqual(
          r.finished.map((f) => [f.ok, f.reason, f.job?.id, f.job?.status]),
          [[false, 'lost', c.id, 'running']],
        );
        assert.deepEqual(
          r.jobs.map((j) => j.key),
          ['d'],
        );
        const d = r.jobs[0];
        assert.ok(d !== undefined);
        const both = [`${c.id}:${c.epoch}`, `${d.id}:${d.epoch}`];
        const text = await cli.run('job', 'finish-batch', '--session', s, ...both);
        assert.equal(text.code, 0, text.stderr);
        assert.match(
          text.stdout,
          new RegExp(`^finished job ${c.id} done .*\nfinished job ${d.id} done .*\n$`),
        );
        assert.equal(
          (await cli.run('job', 'next', '--session', s, '--batch', '10')).stdout,
          'no job is due\n',
        );
      });

      test('bad batch input is one line, exit 2, and changes nothing', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const s = await cli.session();
        await cli.json(0, 'enqueue', 'a');
        const taken = await cli.json<Taken>(0, 'job', 'next', '--session', s, '--batch', '1');
        const a = taken.jobs[0];
        assert.ok(a !== undefined);
        await cli.json(0, 'enqueue', 'b');
        const before = await cli.json<JobJson[]>(0, 'queue', 'list');
        const cases: [string[], RegExp][] = [
          [['job', 'next', '--session', s, '--batch', '0'], /^baton: --batch must be from 1 to 1000, got 0/],
          [
            ['job', 'next', '--session', s, '--batch', '-3'],
            /^baton: --batch must be from 1 to 1000, got -3/,
          ],
          [
            ['job', 'next', '--session', s, '--batch', '1001'],
            /^baton: --batch must be from 1 to 1000, got 1001/,
          ],
          [
            ['job', 'next', '--session', s, '--batch', 'many'],
            /^baton: --batch must be a whole number, got "many"/,
          ],
          [
            ['job', 'next', '--session', s, '--batch', '2', '--lease', '0s'],
            /^baton: --lease must be from 1 s to 24 h/,
          ],
          // Without --batch, --lease (well formed or not) is refused rather than ignored while a job is taken.
          [['job', 'next', '--session', s, '--lease', '5m'], /--lease .* no --batch was given/],
          [['job', 'next', '--session', s, '--lease', 'x'], /--lease .* no --batch was given/],
          [['job', 'finish-batch', '--session', s, `${a.id}`], /a batch member must be id:epoch/],
          [['job', 'finish-batch', '--session', s, `${a.id}:1:exploded`], /^baton: status must be one of/],
          [['job', 'finish-batch', '--session', s, `${a.id}:1`, `${a.id}:1`], /appears twice in the batch/],
          [
            ['job', 'finish-batch', '--session', s, `${a.id}:1`, '--next', '-1'],
            /^baton: --next must be from 0/,
          ],
          [
            ['job', 'finish-batch', '--session', s, `${a.id}:1`, '--next', '1001'],
            /^baton: --next must be from 0/,
          ],
        ];
        for (const [args, why] of cases) {
          const line = assertOneErrorLine(await cli.run(...args), 2, args.join(' '));
          assert.match(line, why, args.join(' '));
        }
        assert.deepEqual(await cli.json<JobJson[]>(0, 'queue', 'list'), before);
      });
    });
  }
