/**
 * RowContents, the sealer's rowContent for the rows of one read, must give rowContent's text for
 * every row, whatever its columns: rows of one read share their columns, but the cache that relies
 * on it must notice a row whose columns differ (another set, another order, one more or less).
 * LeafView, the verifier's in-place reading of a checkpoint's leaves, must give back what
 * encodeLeaves wrote. Seeded property tests (fast-check): a failure prints its seed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeLeaves, JsonText, LeafView, RowContents, rowContent } from './ledger.js';

const columnName = fc.constantFrom('id', 'at', 'type', 'detail', 'host', 'Z', 'a', 'é', 'token_id', '"q"');

const columnValue = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.jsonValue(),
  fc.uint8Array({ maxLength: 4 }),
);

/** Rows drawn from a few column sets, so that runs of one set alternate with others. */
const rows = fc
  .array(fc.uniqueArray(columnName, { maxLength: 7 }), { minLength: 1, maxLength: 3 })
  .chain((shapes) =>
    fc
      .array(
        fc.record({
          shape: fc.integer({ min: 0, max: shapes.length - 1 }),
          values: fc.array(columnValue, { minLength: 7, maxLength: 7 }),
        }),
        { maxLength: 30 },
      )
      .map((drawn) =>
        drawn.map(({ shape, values }) =>
          Object.fromEntries((shapes[shape] ?? []).map((name, index) => [name, values[index]])),
        ),
      ),
  );

test('RowContents gives rowContent of every row, across rows whose columns differ', () => {
  fc.assert(
    fc.property(rows, (drawn) => {
      const contents = new RowContents();
      for (const row of drawn) assert.equal(contents.of(row), rowContent(row));
    }),
  );
});

test("RowContents hashes a json column's text as the verifier hashes its parsed value, JSON null included", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const text = JSON.stringify(value);
      const sealed = new RowContents().of({ id: 1, type: 't', detail: new JsonText(text) });
      assert.equal(sealed, rowContent({ id: 1, type: 't', detail: JSON.parse(text) as unknown }));
    }),
  );
  assert.equal(new RowContents().of({ id: 1, detail: new JsonText('null') }), '{}');
});

test('RowContents: the same columns in another order, one dropped, one added', () => {
  const contents = new RowContents();
  const cases = [
    { id: 1, type: 'a', at: 't', detail: { b: 1, a: [2, { d: null, c: 'x' }] } },
    { at: 't', id: 2, type: 'b', detail: {} },
    { id: 3, type: 'c', at: null },
    { id: 4, type: 'c', at: 't', host: 'h' },
    {},
  ];
  for (const row of cases) assert.equal(contents.of(row), rowContent(row));
  assert.equal(
    contents.of(cases[0] ?? {}),
    '{"at":"t","detail":{"a":[2,{"c":"x","d":null}],"b":1},"type":"a"}',
  );
});

test('LeafView reads back every id and hash encodeLeaves wrote; a partial leaf or a non-hex hash is refused', () => {
  const leaf = fc.record({
    id: fc.maxSafeInteger(),
    hash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('hex')),
  });
  fc.assert(
    fc.property(fc.array(leaf, { maxLength: 20 }), fc.nat({ max: 7 }), (leaves, offset) => {
      const bytes = encodeLeaves(leaves);
      const framed = new Uint8Array(offset + bytes.length);
      framed.set(bytes, offset);
      const view = LeafView.of(framed.subarray(offset));
      assert.ok(view !== null);
      assert.deepEqual(
        Array.from({ length: view.length }, (_, index) => ({ id: view.id(index), hash: view.hash(index) })),
        leaves.map((entry) => ({ ...entry })),
      );
      assert.equal(LeafView.of(new Uint8Array(bytes.length + 1 + offset)), null);
    }),
  );
  const edges = [
    0,
    1,
    -1,
    2 ** 32 - 1,
    2 ** 32,
    -(2 ** 32),
    Number.MAX_SAFE_INTEGER,
    Number.MIN_SAFE_INTEGER,
  ];
  const hash = '00'.repeat(32);
  const view = LeafView.of(encodeLeaves(edges.map((id) => ({ id, hash }))));
  assert.deepEqual(
    edges.map((_, index) => view?.id(index)),
    edges,
  );
  for (const id of [Number.NaN, 1.5, 2 ** 53]) assert.throws(() => encodeLeaves([{ id, hash }]), RangeError);
  for (const bad of ['0'.repeat(63), 'g'.repeat(64), 'AB'.repeat(32), `${'0'.repeat(63)}\u0100`]) {
    assert.throws(() => encodeLeaves([{ id: 1, hash: bad }]), RangeError);
  }
});
