/**
 * The store against its reference model (src/store/conformance/model.ts): random sequences of
 * session starts and ends, claims, releases (done or not) and effects with the right or a wrong
 * epoch, heartbeats, enqueues, claimNext, job start, finish and cancel, and reopening a done
 * task, on both engines, seeded. Every
 * answer and the final state must match the model's.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Holder } from '../../src/core/claim.js';
import { FencedError, TaskStateError } from '../../src/core/errors.js';
import { StoreModel, type Answer, type ModelOp } from '../../src/store/conformance/model.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { bothEngines } from '../support/databases.js';

const TASKS = 3;
const key = (k: number): string => `model-${k}`;
const s = fc.nat(5);
const k = fc.nat(TASKS - 1);
const de = fc.integer({ min: -1, max: 1 });
const j = fc.nat(7);
const w = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => ({ arbitrary, weight });

const op: fc.Arbitrary<ModelOp> = fc.oneof(
  w(fc.constant({ t: 'session.start' as const }), 2),
  w(fc.record({ t: fc.constant('session.end' as const), s }), 1),
  w(fc.record({ t: fc.constant('claim' as const), s, k }), 4),
  w(
    fc.record({
      t: fc.constant('release' as const),
      s,
      k,
      de,
      outcome: fc.constantFrom('done' as const, 'released' as const),
    }),
    3,
  ),
  w(fc.record({ t: fc.constant('reopen' as const), k }), 1),
  w(fc.record({ t: fc.constant('effect' as const), s, k, de }), 3),
  w(fc.record({ t: fc.constant('heartbeat' as const), s, k: fc.option(k), de }), 2),
  w(fc.record({ t: fc.constant('enqueue' as const), k }), 2),
  w(fc.record({ t: fc.constant('claimNext' as const), s }), 2),
  w(fc.record({ t: fc.constant('job.start' as const), j, s, de }), 2),
  w(
    fc.record({
      t: fc.constant('job.finish' as const),
      j,
      s,
      de,
      status: fc.constantFrom(
        'done' as const,
        'failed' as const,
        'oom_killed' as const,
        'cancelled' as const,
      ),
    }),
    2,
  ),
  w(fc.record({ t: fc.constant('job.cancel' as const), j }), 1),
);

/** The op with its indices brought into range; one that needs what does not exist yet makes it. */
function resolve(o: ModelOp, m: StoreModel): ModelOp {
  const sessions = m.live.length;
  if ('s' in o && sessions === 0) return { t: 'session.start' };
  if ('j' in o && m.jobs.length === 0) return { t: 'enqueue', k: 0 };
  const out: Record<string, unknown> = { ...o };
  if ('s' in o) out['s'] = o.s % sessions;
  if ('j' in o) out['j'] = o.j % m.jobs.length;
  return out as ModelOp;
}

/** Runs the op on the store and answers in the model's terms. */
async function perform(
  store: Store,
  ids: { sessions: number[]; jobs: number[] },
  m: StoreModel,
  o: ModelOp,
): Promise<Answer> {
  const sid = (i: number) => ids.sessions[i] ?? -1;
  const jid = (i: number) => ids.jobs[i] ?? -1;
  const holder = (h: Holder | null) =>
    h === null ? null : { s: ids.sessions.indexOf(h.session), epoch: h.epoch };
  const fenced = (r: { ok: boolean; current?: Holder | null }) =>
    r.ok ? { ok: true } : { ok: false, current: holder(r.current ?? null) };
  const fencedError = async <T>(work: Promise<T>): Promise<T | { error: string }> =>
    work.catch((e: unknown) => {
      if (e instanceof FencedError) return { error: 'fenced' as const };
      if (e instanceof TaskStateError) return { error: e.code };
      throw e;
    });
  switch (o.t) {
    case 'session.start': {
      ids.sessions.push((await store.sessions.start({ kind: 'agent', host: 'model', pid: 1 })).id);
      return { s: ids.sessions.length - 1 };
    }
    case 'session.end':
      return { ended: (await store.sessions.end(sid(o.s))).ended };
    case 'claim': {
      const r = await fencedError(store.claims.acquire({ key: key(o.k), session: sid(o.s) }));
      if ('error' in r) return r;
      return r.ok
        ? { ok: true, epoch: r.claim.epoch, granted: r.granted }
        : { ok: false, holder: holder(r.holder) };
    }
    case 'release':
      return fenced(
        await store.claims.release({
          key: key(o.k),
          session: sid(o.s),
          epoch: m.epochFor(o.k, o.de),
          outcome: o.outcome,
        }),
      );
    case 'reopen': {
      const by = { name: 'model' };
      const r = await fencedError(store.lifecycle.transition({ key: key(o.k), action: 'reopen', by }));
      return 'error' in r ? r : { ok: true };
    }
    case 'effect':
      return fenced(
        await store.effects.record({
          key: key(o.k),
          session: sid(o.s),
          epoch: m.epochFor(o.k, o.de),
          kind: 'w',
        }),
      );
    case 'heartbeat': {
      const claim = o.k === null ? undefined : { key: key(o.k), epoch: m.epochFor(o.k, o.de) };
      return fenced(await store.sessions.heartbeat({ session: sid(o.s), claim }));
    }
    case 'enqueue': {
      const r = await fencedError(store.jobs.enqueue({ key: key(o.k) }));
      if ('error' in r) return r;
      if (r.created) ids.jobs.push(r.job.id);
      return { created: r.created, j: ids.jobs.indexOf(r.job.id) };
    }
    case 'claimNext': {
      const r = await fencedError(store.jobs.claimNext({ session: sid(o.s) }));
      if (r === null || 'error' in r) return r;
      return { j: ids.jobs.indexOf(r.id), epoch: r.epoch, attempt: r.attempt };
    }
    case 'job.start':
    case 'job.finish': {
      const guard = { id: jid(o.j), session: sid(o.s), epoch: m.jobEpochFor(o.j, o.de) };
      const r =
        o.t === 'job.start'
          ? await store.jobs.start(guard)
          : await store.jobs.finish({ ...guard, status: o.status });
      return { ok: r.ok, status: r.job?.status };
    }
    case 'job.cancel': {
      const r = await store.jobs.cancel({ id: jid(o.j) });
      return { ok: r.ok, status: r.job?.status };
    }
  }
}

for (const db of bothEngines()) {
  describe(`${db.name}: the store against its reference model`, () => {
    test('answers every random command sequence as the model does, and ends in the same state', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
          const store = await openStore(await db.fresh());
          try {
            for (let i = 0; i < TASKS; i++) await store.tasks.add({ key: key(i) });
            const model = new StoreModel(TASKS);
            const ids = { sessions: [] as number[], jobs: [] as number[] };
            for (const [n, raw] of ops.entries()) {
              const o = resolve(raw, model);
              const actual = await perform(store, ids, model, o);
              const expected = model.apply(o);
              assert.deepEqual(actual, expected, `step ${n}: ${JSON.stringify(o)}`);
            }
            for (let i = 0; i < TASKS; i++) {
              const task = await store.tasks.get(key(i));
              const t = model.tasks[i];
              assert.equal(task?.epoch, t?.epoch);
              assert.equal(task?.holder?.session ?? null, t?.holder == null ? null : ids.sessions[t.holder]);
              assert.equal((await store.effects.list({ key: key(i) })).length, t?.effects);
              assert.equal(task?.state, t?.state);
            }
            for (const [n, id] of ids.jobs.entries()) {
              assert.equal((await store.jobs.get(id))?.status, model.jobs[n]?.status);
            }
          } finally {
            await store.close();
          }
        }),
        { seed: 20261129, numRuns: 25 },
      );
    });
  });
}
