/**
 * The leader's trim as walks (../output-trim.ts, docs/decisions/0043): the finished jobs are read
 * in batches from where the store's last pass stopped, so every ended job is shrunk once and
 * dropped once after the cutoff passes it: jobs that share one finish across a batch's edge, a job
 * that finishes after a pass, and a history longer than one batch included.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { outputRows, OUTPUT_KEEP_ENDED, OUTPUT_WINDOW } from '../../core/output-stream.js';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';
import type { Store } from '../store.js';

/** Jobs that each ran on `host`, wrote a whole window without a last flush (a runner that died), and ended. */
async function givenEnded(store: Store, host: string, keys: readonly string[]): Promise<number[]> {
  const { session } = await givenHost(store, host);
  const term = await givenLeader(store);
  const ids: number[] = [];
  for (const key of keys) {
    const { job } = await store.jobs.enqueue({ key });
    const placed = await store.dispatch.place({ id: job.id, host, term });
    assert.ok(placed.ok);
    const guard = { id: job.id, session: session.id, epoch: placed.job.epoch };
    await store.jobs.start(guard);
    const agent = await store.sessions.start({ kind: 'agent', host, pid: 3 });
    await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 3 });
    const { attempt, epoch } = (await store.jobs.get(job.id)) ?? assert.fail('the job');
    const bytes = Buffer.from('x'.repeat(OUTPUT_WINDOW));
    const row = { job: job.id, attempt, epoch, offset: 0, bytes, ended: false };
    assert.deepEqual(await store.output.append({ session: session.id, rows: outputRows([row]) }), [job.id]);
    assert.ok((await store.jobs.finish({ ...guard, status: 'done', exitCode: 0 })).ok);
    ids.push(job.id);
  }
  return ids;
}

export function exerciseOutputTrim(harness: Harness): void {
  describe('output trim walks', () => {
    test('shrinks and drops every ended job once, across batches, shared finishes and later passes', () =>
      withFixture(harness, async ({ store, raw }) => {
        const kept = async (id: number): Promise<number> => {
          const read = await store.output.read({ job: id, attempt: 1, offset: 0 });
          return read.size - (read.rows[0]?.offset ?? read.size);
        };
        const ids = await givenEnded(store, 'box-1', ['a', 'b', 'c', 'd', 'e']);
        // One finish for all five: a batch of two ends between jobs that share it.
        await raw.exec(
          `UPDATE jobs SET finished_at = (SELECT min(finished_at) FROM jobs WHERE status = 'done')`,
        );
        const pass = { keep: OUTPUT_KEEP_ENDED, endedBefore: 0, batch: 2 };
        assert.ok((await store.output.trim(pass)) > 0);
        for (const id of ids) {
          const left = await kept(id);
          assert.ok(left >= OUTPUT_KEEP_ENDED && left < 2 * OUTPUT_KEEP_ENDED, `job ${id} kept ${left}`);
        }
        assert.equal(await store.output.trim(pass), 0, 'a second pass finds nothing more');
        const [later] = await givenEnded(store, 'box-2', ['f']);
        assert.equal(await kept(later ?? 0), OUTPUT_WINDOW);
        // Its finish behind where the walk stopped, as a commit that lands after a pass read past its time.
        const first = (await store.jobs.get(ids[0] ?? 0))?.finishedAt ?? 0;
        const earlier = harness.name.startsWith('sqlite') ? '- 1' : "- interval '1 millisecond'";
        await raw.exec(
          `UPDATE jobs SET finished_at = (SELECT min(finished_at) ${earlier} FROM jobs) WHERE id = ${later}`,
        );
        assert.ok(
          ((await store.jobs.get(later ?? 0))?.finishedAt ?? Infinity) < first,
          'moved behind the walk',
        );
        assert.ok((await store.output.trim(pass)) > 0, 'a job that ended after the pass, behind it');
        assert.ok((await kept(later ?? 0)) < 2 * OUTPUT_KEEP_ENDED);
        await store.output.trim({ ...pass, endedBefore: first + 1 });
        for (const id of [...ids, later ?? 0]) {
          const read = await store.output.read({ job: id, attempt: 1, offset: 0 });
          assert.equal(read.size, 0, `job ${id} dropped`);
        }
      }));

    test('a late job behind a walk that ended on a full batch is still shrunk', () =>
      withFixture(harness, async ({ store, raw }) => {
        const ids = await givenEnded(store, 'box-1', ['a', 'b']);
        const pass = { keep: OUTPUT_KEEP_ENDED, endedBefore: 0, batch: 2 };
        assert.ok((await store.output.trim(pass)) > 0, 'one full batch, then an empty one');
        const [late] = await givenEnded(store, 'box-2', ['c']);
        const earlier = harness.name.startsWith('sqlite') ? '- 1' : "- interval '1 millisecond'";
        await raw.exec(
          `UPDATE jobs SET finished_at = (SELECT min(finished_at) ${earlier} FROM jobs) WHERE id = ${late}`,
        );
        assert.ok((await store.output.trim(pass)) > 0);
        const read = await store.output.read({ job: late ?? 0, attempt: 1, offset: 0 });
        const kept = read.size - (read.rows[0]?.offset ?? read.size);
        assert.ok(
          kept < 2 * OUTPUT_KEEP_ENDED,
          `job ${late} kept ${kept} (jobs before it: ${ids.join(', ')})`,
        );
      }));

    test('a second store (a new leader) resumes each walk where the last pass stopped', () =>
      withFixture(harness, async ({ store, raw, openAnother }) => {
        const ids = await givenEnded(store, 'box-1', ['a', 'b', 'c']);
        const pass = { keep: OUTPUT_KEEP_ENDED, endedBefore: 0, batch: 2 };
        assert.ok((await store.output.trim(pass)) > 0);
        const walks = await raw.exec('SELECT walk FROM output_trim_walks ORDER BY walk');
        // The drop walk (nothing ended before its cutoff of 0) read no job, so it keeps none yet.
        assert.deepEqual(
          walks.map((row) => row['walk']),
          ['shrink'],
          'the shrink walk keeps its cursor',
        );
        // A job that ended an hour before every job the walk read: a walk from the start would
        // shrink it, a resumed one is past it (the 10 s overlap covers commits, not an hour).
        const [behind] = await givenEnded(store, 'box-2', ['d']);
        const hourBack = harness.name.startsWith('sqlite') ? '- 3600000' : "- interval '1 hour'";
        await raw.exec(
          `UPDATE jobs SET finished_at = (SELECT min(finished_at) ${hourBack} FROM jobs) WHERE id = ${behind}`,
        );
        const [after] = await givenEnded(store, 'box-3', ['e']);
        const second = await openAnother();
        try {
          assert.ok((await second.output.trim(pass)) > 0, 'it shrinks the job that ended after the pass');
          const size = async (id: number): Promise<number> => {
            const read = await second.output.read({ job: id, attempt: 1, offset: 0 });
            return read.size - (read.rows[0]?.offset ?? read.size);
          };
          assert.ok((await size(after ?? 0)) < 2 * OUTPUT_KEEP_ENDED, 'the new job was shrunk');
          assert.equal(
            await size(behind ?? 0),
            OUTPUT_WINDOW,
            `resumed past job ${behind}, not from ${ids[0]}`,
          );
        } finally {
          await second.close();
        }
      }));
  });
}
