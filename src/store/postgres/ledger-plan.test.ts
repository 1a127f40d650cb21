/**
 * The plan of the sealer's read, not its speed: on a ledger filled faster than ANALYZE runs (a
 * backlog, a bulk load), `ledger.unsealed` must walk the primary key and stop at its limit, never
 * read and sort every unsealed row. The two-sided range it used was planned as a bitmap scan of
 * the whole range and a sort: a million rows went past the store's query timeout under load.
 * Also how the sealer's appends store a checkpoint's leaves.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresClient } from '../../../test/support/databases.js';
import { CHECKPOINT_ROWS_MAX } from '../../core/ledger.js';
import { UNSEALED_ROWS } from './ledger.js';

const ROWS = 120_000;
let client: pg.Client;

before(async () => {
  client = await freshPostgresClient(); // migrated by fresh()
  // No ANALYZE after the load: what the sealer meets right after a burst of writes.
  await client.query(
    `INSERT INTO audit_events (at, type, task_key, job_id, detail)
     SELECT now(), 'job:finished', 'plan-' || g, g, '{}' FROM generate_series(1, $1::int) g`,
    [ROWS],
  );
});

after(() => client.end());

// Which scan feeds the limit is the planner's (a small table is cheaper read whole into a top-N
// heap; a million rows walk audit_events_pkey: EXPLAIN ANALYZE 691 ms before, 24 ms after). What
// must hold at every size is that the settled bound never narrows the scan, so the limit bounds it.
test('the sealer’s read takes its limit before the settled bound, never a range read whole and sorted', async () => {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${UNSEALED_ROWS}`, [
    0,
    ROWS,
    CHECKPOINT_ROWS_MAX,
  ]);
  const p = rows.map((r) => r['QUERY PLAN']).join('\n');
  assert.match(p, /^Subquery Scan on n\n\s+Filter: \(n\.id <= '\d+'::bigint\)\n\s+->\s+Limit\n/, p);
  assert.equal(p.match(/id <=/g)?.length, 1, p);
  assert.doesNotMatch(p, /Bitmap/, p);
});

test('it hands out what the plain range did: the first rows after the sealed id, up to the settled one', async () => {
  const got = await client.query<{ id: string }>(UNSEALED_ROWS, [10, 20, 100]);
  assert.deepEqual(
    got.rows.map((r) => Number(r.id)),
    Array.from({ length: 10 }, (_, i) => 11 + i),
  );
  const limited = await client.query<{ id: string }>(UNSEALED_ROWS, [10, 20, 3]);
  assert.deepEqual(
    limited.rows.map((r) => Number(r.id)),
    [11, 12, 13],
  );
});

// Under load the rows past the settled id are a round's worth of the writers' rows; a scan that ran
// on to its limit through them read, and checked the visibility of, twice the rows it handed out.
test('the sealer’s read stops at the settled id: it fetches no row written after it', async () => {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${UNSEALED_ROWS}`,
    [10_000, 11_000, CHECKPOINT_ROWS_MAX],
  );
  const p = rows.map((r) => r['QUERY PLAN']).join('\n');
  assert.match(p, /->\s+Limit \(actual rows=1000 loops=1\)/, p);
});

// Leaves are hashes behind 8-byte ids: pglz, tried by default, works through a checkpoint's 320 KB
// and gives up (under 25 % saved), ~11 ms of server CPU per checkpoint for nothing (migration 0029).
test('a checkpoint’s leaves are stored out of line with no compression attempt (STORAGE EXTERNAL)', async () => {
  const { rows } = await client.query<{ attstorage: string }>(
    `SELECT attstorage FROM pg_attribute WHERE attrelid = 'audit_checkpoints'::regclass AND attname = 'leaves'`,
  );
  assert.deepEqual(
    rows.map((row) => row.attstorage),
    ['e'],
  );
});

// newestCheckpoint and APPEND read the last sealed id with this expression, twice a sealing
// round; under load a round a tenth of a second writes a checkpoint, so the table grows by the
// hour. Scanned, 200,000 checkpoints cost 60-85 ms a read (migration 0030).
test('the last sealed id is read from an index on last_id, never by a scan of every checkpoint', async () => {
  await client.query(
    `INSERT INTO audit_checkpoints (seq, kind, first_id, last_id, row_count, leaves, root, prev_hash, hash,
       key_id, signature, sealed_at)
     SELECT g, 'seal', g, g, 1, '\\x00'::bytea, 'r', 'p', 'h', 'k', 's', now() FROM generate_series(1, 50000) g`,
  );
  await client.query('ANALYZE audit_checkpoints');
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(
    'EXPLAIN (COSTS OFF) SELECT coalesce(max(last_id), 0) FROM audit_checkpoints',
  );
  const p = rows.map((r) => r['QUERY PLAN']).join('\n');
  assert.match(p, /Index Only Scan Backward using audit_checkpoints_by_last_id/, p);
  assert.doesNotMatch(p, /Seq Scan/, p);
});
