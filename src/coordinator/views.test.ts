import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from '../core/errors.js';
import { outputRows } from '../core/output-stream.js';
import { openStore } from '../store/open.js';
import { bothEngines } from '../../test/support/databases.js';
import { Coordinator } from './coordinator.js';

for (const db of bothEngines()) {
  describe(`the operator's views (${db.name})`, () => {
    const open = async () => {
      const store = await openStore(await db.fresh());
      return { store, views: new Coordinator(store).views };
    };

    test('pages the queue by keyset and refuses a bad filter with one clear line', async () => {
      const { store, views } = await open();
      try {
        for (let i = 0; i < 5; i++) await store.jobs.enqueue({ key: `k${i}` });
        const first = await views.queue({ limit: '2' });
        assert.deepEqual(
          first.items.map((j) => j.key),
          ['k4', 'k3'],
        );
        const second = await views.queue({ limit: 2, before: String(first.next) });
        assert.deepEqual(
          second.items.map((j) => j.key),
          ['k2', 'k1'],
        );
        const last = await views.queue({ limit: 2, before: second.next });
        assert.deepEqual(
          last.items.map((j) => j.key),
          ['k0'],
        );
        assert.equal(last.next, null);
        assert.equal((await views.queue({ status: 'queued,running' })).items.length, 5);
        await assert.rejects(views.queue({ status: 'bogus' }), InvalidInputError);
        await assert.rejects(views.queue({ limit: 100_000 }), InvalidInputError);
        await assert.rejects(views.queue({ before: '-1' }), InvalidInputError);
      } finally {
        await store.close();
      }
    });

    test("shows a claim's holder, its workspace lock, and what a force-release would do", async () => {
      const { store, views } = await open();
      try {
        const s = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 99 });
        const { job } = await store.jobs.enqueue({ key: 't', ramMb: 128 });
        const c = await store.claims.acquire({ key: 't', session: s.id });
        assert.ok(c.ok);
        await store.workspaces.add({ name: 'api', path: '/srv/api', kind: 'dir' });
        const lock = await store.workspaceLocks.acquire({ workspace: 'api', session: s.id, jobId: job.id });
        assert.ok(lock.ok);
        const { claims } = await views.claims(60_000);
        assert.equal(claims.length, 1);
        const [view] = claims;
        assert.ok(view !== undefined);
        assert.equal(view.session, s.id);
        assert.equal(view.host, 'box-1');
        assert.equal(view.pid, 99);
        assert.equal(view.late, false);
        assert.deepEqual(
          view.locks.map((l) => l.workspace),
          ['api'],
        );
        assert.match(view.forceRelease.join('\n'), /epoch 1; its later writes are fenced/);
        assert.match(view.forceRelease.join('\n'), /release workspace api/);
        // Late: judged against a threshold the claim's age has passed.
        const late = await views.claims(-1);
        assert.equal(late.claims[0]?.late, true);
        const [ws] = await views.workspaces();
        assert.equal(ws?.lock?.session, s.id);
        assert.equal(ws?.holder?.host, 'box-1');
      } finally {
        await store.close();
      }
    });

    test('streams the ledger newest first, filtered by host, and tells the change mark', async () => {
      const { store, views } = await open();
      try {
        await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
        const mark = await views.changeMark();
        const s2 = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 2 });
        assert.ok((await views.changeMark()) > mark);
        const page = await views.audit({ host: 'box-2' });
        assert.ok(page.items.length > 0);
        assert.ok(page.items.every((e) => e.host === 'box-2'));
        const all = await views.audit({});
        assert.equal(all.items[0]?.id, await views.changeMark());
        assert.ok((await views.audit({ session: String(s2.id) })).items.every((e) => e.session === s2.id));
        await assert.rejects(views.audit({ type: 'no:such' }), InvalidInputError);
      } finally {
        await store.close();
      }
    });

    test('reports each session with the issues it worked, filtered by host, and refuses a bad time', async () => {
      const { store, views } = await open();
      try {
        const a = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 11, name: 'claude' });
        const b = await store.sessions.start({ kind: 'human', host: 'box-2', pid: 12 });
        await store.tasks.add({ key: 'rep-1', title: 'one' });
        const held = await store.claims.acquire({ key: 'rep-1', session: a.id });
        assert.ok(held.ok);
        assert.ok(
          (
            await store.claims.release({
              key: 'rep-1',
              session: a.id,
              epoch: held.claim.epoch,
              outcome: 'failed',
            })
          ).ok,
        );
        const all = await views.sessions({});
        const mine = all.find((s) => s.session === a.id);
        assert.deepEqual(
          mine?.issuesWorked.map((i) => [i.key, i.epoch]),
          [['rep-1', held.claim.epoch]],
        );
        assert.ok(all.some((s) => s.session === b.id));
        const box2 = await views.sessions({ host: 'box-2' });
        assert.deepEqual(
          box2.map((s) => s.session),
          [b.id],
        );
        assert.deepEqual(await views.sessions({ until: '2000-01-01' }), []);
        await assert.rejects(views.sessions({ since: 'yesterday' }), /since must be an ISO date/);
        await assert.rejects(views.sessions({ limit: '0' }), InvalidInputError);
      } finally {
        await store.close();
      }
    });

    test('shows the last bytes of an output stream of more rows than a read answers, from a line start', async () => {
      const { store, views } = await open();
      try {
        const runner = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
        await store.jobs.enqueue({ key: 'k' });
        const job = await store.jobs.claimNext({ session: runner.id, start: true });
        assert.ok(job !== null);
        // 300 rows of one 100-byte line each, mostly two-byte characters.
        const line = (at: number): string => `${String(at).padStart(5, '0')} ${'é'.repeat(46)} \n`;
        for (let at = 0; at < 300; at++) {
          const bytes = Buffer.from(line(at));
          assert.equal(bytes.length, 100);
          const rows = outputRows([
            { job: job.id, attempt: 1, epoch: job.epoch, offset: at * 100, bytes, ended: false },
          ]);
          await store.output.append({ session: runner.id, rows });
        }
        // 16385 bytes back from the end is inside an é of line 136: the text starts with line 137.
        const tail = await views.streamTail(job.id, 1, 16_385);
        const want = Array.from({ length: 163 }, (_, at) => line(137 + at)).join('');
        assert.equal(tail, want);
        assert.equal(await views.streamTail(job.id, 2, 16_385), null, 'nothing kept of attempt 2');
      } finally {
        await store.close();
      }
    });
  });
}
