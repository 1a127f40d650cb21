/**
 * The batch routes of pull mode, through a real `baton serve` on both engines: bad batch input
 * is 400 `invalid_input` naming the field and writes nothing; a finish-batch reports a member
 * named with a stale epoch as lost, per member, while the others finish; a host token of another
 * host is refused (403, auth:refused) and changes nothing.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

type Job = { id: number; key: string; epoch: number; status: string };

for (const db of bothEngines()) {
  describe(`pull-mode batches over HTTP (${db.name})`, () => {
    test('bad sizes are 400 and change nothing; a stale member is lost alone; another host is refused', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'batch-test' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h1', pid: 1 })).id;
        for (const key of ['a', 'b', 'c']) await store.jobs.enqueue({ key, command: 'true' });
        const post = (path: string, body: unknown, token = secret) =>
          call(server.url, 'POST', path, { token, body });

        const before = await store.observe.auditMaxId();
        for (const [path, body, field] of [
          ['/v1/jobs/next-batch', { session, size: 0 }, 'size'],
          ['/v1/jobs/next-batch', { session, size: -1 }, 'size'],
          ['/v1/jobs/next-batch', { session, size: 1001 }, 'size'],
          ['/v1/jobs/next-batch', { session, size: '3' }, 'size'],
          ['/v1/jobs/next-batch', { session }, 'size'],
          ['/v1/jobs/finish-batch', { session, finish: [] }, 'finish'],
          ['/v1/jobs/finish-batch', { session, finish: [{ id: 1, epoch: 1 }], next: -1 }, 'next'],
          ['/v1/jobs/finish-batch', { session, finish: [{ id: 1, epoch: 0 }] }, 'finish.0.epoch'],
        ] as const) {
          const r = await post(path, body);
          assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
          const error = r.body['error'] as { code: string; message: string };
          assert.equal(error.code, 'invalid_input');
          // A field left out is `size is required`; one of the wrong kind, `size: …`.
          const named = error.message.startsWith(`${field}: `) || error.message === `${field} is required`;
          assert.ok(named, error.message);
        }
        const lease = await post('/v1/jobs/next-batch', { session, size: 2, lease: '0s' });
        assert.equal(lease.status, 400);
        assert.match((lease.body['error'] as { message: string }).message, /^lease must be from 1 s to 24 h/);
        assert.equal(await store.observe.auditMaxId(), before, 'no refusal wrote anything');

        const other = await store.tokens.create({ scope: 'host', host: 'h2' });
        const refused = await post('/v1/jobs/next-batch', { session, size: 2 }, other.secret);
        assert.equal(refused.status, 403, JSON.stringify(refused.body));
        assert.equal((await store.jobs.list({})).filter((j) => j.status === 'queued').length, 3);

        const taken = await post('/v1/jobs/next-batch', { session, size: 2, lease: '5m' });
        assert.equal(taken.status, 200, JSON.stringify(taken.body));
        const jobs = taken.body['jobs'] as Job[];
        assert.deepEqual(
          jobs.map((j) => [j.key, j.status]),
          [
            ['a', 'running'],
            ['b', 'running'],
          ],
        );
        const [a, b] = jobs;
        assert.ok(a !== undefined && b !== undefined);
        const finish = [
          { id: a.id, epoch: a.epoch },
          { id: b.id, epoch: b.epoch + 1, status: 'failed' },
        ];
        const done = await post('/v1/jobs/finish-batch', { session, finish, next: 5 });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        const finished = done.body['finished'] as { ok: boolean; reason?: string; job: Job }[];
        assert.deepEqual(
          finished.map((f) => [f.ok, f.reason, f.job.id, f.job.status]),
          [
            [true, undefined, a.id, 'done'],
            [false, 'lost', b.id, 'running'],
          ],
        );
        assert.deepEqual(
          (done.body['jobs'] as Job[]).map((j) => j.key),
          ['c'],
        );
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
