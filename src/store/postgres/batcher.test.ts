import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Outcome } from '../outcome.js';
import { Batcher } from './batcher.js';

/** Each call's own answer: ten times its number, except 13, which fails alone. */
const answer = (r: number): Outcome<number> =>
  r === 13 ? { ok: false, error: new Error('unlucky') } : { ok: true, value: r * 10 };

/** A send whose batches are recorded and finished by hand. */
function manual() {
  const batches: { reqs: readonly number[]; done: (ok: boolean) => void }[] = [];
  const send = (reqs: readonly number[]) =>
    new Promise<readonly Outcome<number>[]>((resolve, reject) =>
      batches.push({
        reqs,
        done: (ok) => (ok ? resolve(reqs.map((r) => answer(r))) : reject(new Error('boom'))),
      }),
    );
  return { batches, send };
}

test('sends a call at once while a slot is free, and gathers the calls that wait for one', async () => {
  const { batches, send } = manual();
  const b = new Batcher(send, 1, 3);
  const first = b.submit(1);
  assert.deepEqual(
    batches.map((x) => x.reqs),
    [[1]],
    'an idle batcher does not wait',
  );
  const rest = [2, 3, 4, 5].map((n) => b.submit(n));
  assert.equal(batches.length, 1, 'nothing more is sent while the only slot is busy');
  batches[0]?.done(true);
  assert.equal(await first, 10);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    batches.map((x) => x.reqs),
    [[1], [2, 3, 4]],
    'the waiting calls go together, at most 3',
  );
  batches[1]?.done(true);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(batches[2]?.reqs, [5]);
  batches[2]?.done(true);
  assert.deepEqual(await Promise.all(rest), [20, 30, 40, 50], 'each call gets its own answer');
});

test('fails every call of a failed batch with its error, and goes on with the next', async () => {
  const { batches, send } = manual();
  const b = new Batcher(send, 2, 10);
  const a = b.submit(1);
  const c = b.submit(2);
  assert.equal(batches.length, 2, 'two slots: two batches of one');
  const d = b.submit(3);
  batches[0]?.done(false);
  await assert.rejects(a, /boom/);
  await new Promise((r) => setImmediate(r));
  batches[1]?.done(true);
  batches[2]?.done(true);
  assert.deepEqual(await Promise.all([c, d]), [20, 30]);
});

test('a call that fails alone in a batch rejects alone', async () => {
  const { batches, send } = manual();
  const b = new Batcher(send, 1, 10);
  const first = b.submit(1);
  const [a, c, d] = [12, 13, 14].map((n) => b.submit(n));
  batches[0]?.done(true);
  await first;
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(batches[1]?.reqs, [12, 13, 14]);
  batches[1]?.done(true);
  assert.equal(await a, 120);
  await assert.rejects(c ?? Promise.resolve(), /unlucky/);
  assert.equal(await d, 140);
});
