/**
 * The ledger's checkpoints and the session report on PostgreSQL. Ids commit out of order, so
 * `unsealed` hands out only settled rows, up to the id ledger-horizon.ts says no transaction in
 * flight can still commit below; the hot path takes no extra lock.
 *
 * Rows are read with `SELECT *`, every column by name, parsed as the pool parses them except times
 * (timestamptz, date, …), which stay the text the server prints (ISO, UTC: set on the connection),
 * microseconds and all: hashing a JS Date would drop them. The sealer's read (`unsealed`) also keeps
 * json and jsonb as their text (JsonText), which the sealer hashes as the value it parses to,
 * parsing each distinct payload once per read.
 */
import type pg from 'pg';
import { ConflictError } from '../../core/errors.js';
import { JsonText, type Checkpoint } from '../../core/ledger.js';
import type * as shared from '../run-rows.js';
import { sessionReportOf } from '../run-rows.js';
import {
  CHECKPOINT_COLUMNS,
  checkpointOf,
  leavesView,
  type CheckpointColumns,
} from '../checkpoint-columns.js';
import type { KeyRetirement, LedgerKey, LedgerRowColumns, LedgerStore } from '../ledger-store.js';
import {
  KEY_RETIRED,
  retiredKeyOf,
  retirementRefusal,
  retirementsToRestate,
} from '../../core/ledger-retirement.js';
import { actorJson, atMs, ms, msOrNull, NOW, PG, type PgEncoding } from './rows.js';
import { LedgerHorizon } from './ledger-horizon.js';
import { postgresAudit } from './leases-audit.js';
import type { Store } from '../store.js';
import type { PgExecutor } from './executor.js';

type CheckpointRow = CheckpointColumns<Date>;

const toCheckpoint = (row: CheckpointRow): Checkpoint => checkpointOf(row, ms);

/**
 * Inserts $1..$12 (+ leaves $13) only when it follows the newest checkpoint, and, for a seal, when
 * its range starts right after the last sealed row; returns the seq.
 */
const APPEND = `
INSERT INTO audit_checkpoints (${CHECKPOINT_COLUMNS}, leaves)
SELECT $1::bigint, $2::text, $3::bigint, $4::bigint, $5::bigint, $6::text, $7::text, $8::text, $9::text,
  $10::text, ${atMs('$11')}, $12::bigint, $13::bytea
WHERE coalesce((SELECT max(seq) FROM audit_checkpoints), 0) = $1::bigint - 1
  AND ($1::bigint = 1 OR (SELECT hash FROM audit_checkpoints WHERE seq = $1::bigint - 1) = $7::text)
  AND ($2::text <> 'seal' OR $3::bigint = coalesce((SELECT max(last_id) FROM audit_checkpoints), 0) + 1)
ON CONFLICT (seq) DO NOTHING
RETURNING seq`;

const appendValues = (checkpoint: Checkpoint, leaves: Uint8Array | null): unknown[] => [
  ...[
    checkpoint.seq,
    checkpoint.kind,
    checkpoint.firstId,
    checkpoint.lastId,
    checkpoint.rowCount,
    checkpoint.root,
    checkpoint.prevHash,
    checkpoint.hash,
    checkpoint.keyId,
    checkpoint.signature,
  ],
  ...[checkpoint.sealedAt, checkpoint.throughSeq, leaves === null ? null : Buffer.from(leaves)],
];

/**
 * The next `$3` unsealed rows after `$1`, those up to the settled id `$2`. The limit is taken on
 * `id > $1` alone and the settled bound applied after it: the same rows as `id > $1 AND id <= $2
 * ORDER BY id LIMIT $3`, but that two-sided range, on a ledger filled faster than ANALYZE runs
 * (a backlog, a bulk load), is estimated at a few thousand rows below the limit, so PostgreSQL
 * read every row in it and sorted them (a million rows: 0.7 s at rest, past the 5 s query timeout
 * on a loaded machine). One side alone is estimated at a third of the table, and the scan walks
 * `audit_events_pkey` and stops at the limit. Ids are distinct integers, so at most `$2 - $1` rows
 * lie in the range: the limit is never more than that, or the scan would go on past the settled
 * id through the rows written since (under load, a round's worth: the sealer's read fetched twice
 * the rows it sealed, docs/decisions/0011, "Session of 2026-12-07").
 */
export const UNSEALED_ROWS = `
SELECT * FROM (
  SELECT * FROM audit_events WHERE id > $1::bigint ORDER BY id LIMIT least($3::int, $2::bigint - $1::bigint)
) n
WHERE id <= $2::bigint ORDER BY id`;

/** date, time, timestamp, timestamptz, timetz, interval: kept as the server's text. */
const TIME_TYPES = new Set([1082, 1083, 1114, 1184, 1266, 1186]);
/** json, jsonb: the sealer's read keeps them as JsonText, which hashes as the parsed value. */
const JSON_TYPES = new Set([114, 3802]);

type Parse = (text: string) => unknown;

/** The pool's parsers but for times (as text) and, for the sealer's read (`json: 'text'`), JSON. */
function ledgerTypes(pool: pg.CustomTypesConfig, json: 'parsed' | 'text'): pg.CustomTypesConfig {
  const poolParser = pool.getTypeParser as (oid: number, format?: 'text' | 'binary') => Parse;
  const parser = (oid: number, format?: 'text' | 'binary'): Parse => {
    if (TIME_TYPES.has(oid)) return (text: string): string => text;
    if (json === 'text' && JSON_TYPES.has(oid)) return (text: string): JsonText => new JsonText(text);
    return poolParser.call(pool, oid, format);
  };
  return { getTypeParser: parser as pg.CustomTypesConfig['getTypeParser'] };
}

function rowsQuery(params: Parameters<LedgerStore['ledger']['rows']>[0]): { sql: string; values: unknown[] } {
  const values: unknown[] = [params.afterId, params.limit];
  const where = ['id > $1::bigint'];
  const param = (value: unknown, type: string): string => `$${values.push(value)}::${type}`;
  if (params.throughId !== undefined) where.push(`id <= ${param(params.throughId, 'bigint')}`);
  if (params.key !== undefined) where.push(`task_key = ${param(params.key, 'text')}`);
  if (params.session !== undefined) where.push(`session_id = ${param(params.session, 'bigint')}`);
  if (params.host !== undefined) where.push(`host = ${param(params.host, 'text')}`);
  if (params.type !== undefined) where.push(`type = ${param(params.type, 'text')}`);
  if (params.since !== undefined) where.push(`at >= ${atMs(param(params.since, 'bigint'))}`);
  if (params.until !== undefined) where.push(`at < ${atMs(param(params.until, 'bigint'))}`);
  const sql = `SELECT * FROM audit_events WHERE ${where.join(' AND ')} ORDER BY id LIMIT $2::int`;
  return { sql, values };
}

/** Registers a public key ($1, $2) with its `ledger:key-added` row, by $3; no row when the id exists. */
const ADD_KEY = `WITH k AS (
  INSERT INTO ledger_keys (id, public_key, added_at) VALUES ($1::text, $2::text, ${NOW})
  ON CONFLICT (id) DO NOTHING RETURNING id, public_key, added_at
), a AS (
  INSERT INTO audit_events (at, type, detail)
  SELECT added_at, 'ledger:key-added',
    jsonb_build_object('keyId', id, 'publicKey', public_key) || ${actorJson('$3')} FROM k
)
SELECT added_at FROM k`;

/** The newest checkpoint and the last sealed id, read in one snapshot. */
async function newestCheckpoint(exec: PgExecutor): Promise<{ newest: Checkpoint | null; through: number }> {
  const [row] = await exec.rows<Partial<CheckpointRow> & { through: number }>(
    `SELECT s.through, c.* FROM (SELECT coalesce(max(last_id), 0) AS through FROM audit_checkpoints) s
       LEFT JOIN LATERAL (
         SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq DESC LIMIT 1
       ) c ON true`,
  );
  const found = row?.seq === undefined || row.seq === null ? null : toCheckpoint(row as CheckpointRow);
  return { newest: found, through: row?.through ?? 0 };
}

/**
 * The ledger's rows (`audit`) and checkpoints (`ledger`) with one horizon: the sealer and the
 * followers (audit.settled) share its looks at pg_locks (ledger-horizon.ts).
 */
export function postgresLedgerGroups(
  exec: PgExecutor,
  poolTypes: pg.CustomTypesConfig,
): Pick<Store, 'audit' | 'ledger'> {
  const horizon = new LedgerHorizon(exec);
  return { audit: postgresAudit(exec, horizon), ledger: postgresLedger(exec, poolTypes, horizon) };
}

function postgresLedger(
  exec: PgExecutor,
  poolTypes: pg.CustomTypesConfig,
  horizon: LedgerHorizon,
): LedgerStore['ledger'] {
  const types = ledgerTypes(poolTypes, 'parsed');
  const sealerTypes = ledgerTypes(poolTypes, 'text');
  return {
    addKey: (params) => addKey(exec, params),
    retireKey: (params) => retireKey(exec, params),
    keys: async () =>
      (
        await exec.rows<{ id: string; public_key: string; added_at: Date }>(
          'SELECT id, public_key, added_at FROM ledger_keys ORDER BY added_at, id',
        )
      ).map((row) => ({ id: row.id, publicKey: row.public_key, addedAt: ms(row.added_at) })),
    unsealed: (params) => unsealedRows(exec, horizon, sealerTypes, params),
    append: async (checkpoint, leaves) =>
      (await exec.rows(APPEND, appendValues(checkpoint, leaves))).length === 1,
    checkpoints: async (params) =>
      (
        await exec.rows<CheckpointRow>(
          `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints
           WHERE seq > $1::bigint AND ($2::text IS NULL OR kind = $2::text) ORDER BY seq LIMIT $3::int`,
          [params.afterSeq, params.kind ?? null, params.limit],
        )
      ).map(toCheckpoint),
    leaves: async (seq) => {
      const [row] = await exec.rows<{ leaves: Buffer | null }>(
        'SELECT leaves FROM audit_checkpoints WHERE seq = $1::bigint',
        [seq],
      );
      return row?.leaves == null ? null : leavesView(row.leaves);
    },
    rows: async (params) => {
      const { sql, values } = rowsQuery(params);
      return exec.typedRows<LedgerRowColumns>(sql, values, types);
    },
    newestAt: async (firstId, lastId) => {
      const [row] = await exec.rows<{ at: Date | null }>(
        'SELECT max(at) AS at FROM audit_events WHERE id BETWEEN $1::bigint AND $2::bigint',
        [firstId, lastId],
      );
      return msOrNull(row?.at ?? null);
    },
    extent: async () => {
      const [row] = await exec.rows<{ first: number | null; last: number | null }>(
        'SELECT min(id) AS first, max(id) AS last FROM audit_events',
      );
      return { firstId: row?.first ?? null, lastId: row?.last ?? null };
    },
    prune: (record) => prune(exec, record),
  };
}

/** ledger.addKey: one statement (ADD_KEY); ConflictError when the id exists. */
async function addKey(
  exec: PgExecutor,
  params: Parameters<LedgerStore['ledger']['addKey']>[0],
): Promise<LedgerKey> {
  const [row] = await exec.rows<{ added_at: Date }>(ADD_KEY, [
    params.id,
    params.publicKey,
    params.actor ?? null,
  ]);
  if (row === undefined) {
    throw new ConflictError(`ledger key ${params.id} is registered already`, 'use it, or make a new one');
  }
  return { id: params.id, publicKey: params.publicKey, addedAt: ms(row.added_at) };
}

/** Serialises retirements (pg_advisory_xact_lock), so two cannot retire the last two keys at once. */
const RETIRE_LOCK = 0x6c6b7274; // 'lkrt'

/** ledger.retireKey: under RETIRE_LOCK, the refusals (core/ledger-retirement.ts), then the row. */
async function retireKey(
  exec: PgExecutor,
  params: Parameters<LedgerStore['ledger']['retireKey']>[0],
): Promise<KeyRetirement> {
  return exec.transaction(async (transaction) => {
    await transaction.rows('SELECT pg_advisory_xact_lock($1::bigint)', [RETIRE_LOCK]);
    const registered = (await transaction.rows<{ id: string }>('SELECT id FROM ledger_keys')).map(
      (row) => row.id,
    );
    const found = await transaction.rows<LedgerRowColumns>(
      'SELECT type, detail FROM audit_events WHERE type = $1::text',
      [KEY_RETIRED],
    );
    const retired = new Set(found.map(retiredKeyOf).filter((id) => id !== null));
    const refusal = retirementRefusal(params.id, registered, retired);
    if (refusal !== null) throw refusal;
    const [row] = await transaction.rows<{ id: number; at: Date }>(
      `INSERT INTO audit_events (at, type, detail)
       VALUES (${NOW}, $1::text, jsonb_build_object('keyId', $2::text) || ${actorJson('$3')}) RETURNING id, at`,
      [KEY_RETIRED, params.id, params.actor ?? null],
    );
    if (row === undefined) throw new Error('invariant broken: an insert returns its row');
    return { keyId: params.id, row: Number(row.id), at: ms(row.at) };
  });
}

/** ledger.unsealed: the settled rows past the last seal (ledger-horizon.ts), with the newest checkpoint. */
async function unsealedRows(
  exec: PgExecutor,
  horizon: LedgerHorizon,
  types: pg.CustomTypesConfig,
  params: Parameters<LedgerStore['ledger']['unsealed']>[0],
): ReturnType<LedgerStore['ledger']['unsealed']> {
  const { newest: last, through } = await newestCheckpoint(exec);
  const settled = await horizon.settled(params.settleTimeoutMs ?? 2_000);
  const [now] = await exec.rows<{ now: Date }>(`SELECT ${NOW} AS now`);
  const rows =
    settled === null || settled <= through
      ? []
      : await exec.typedRows<LedgerRowColumns>(UNSEALED_ROWS, [through, settled, params.limit], types);
  return {
    newest: last,
    sealedThrough: through,
    rows,
    now: now === undefined ? 0 : ms(now.now),
  };
}

/** The prune record first (it carries every guard), then, only if it went in, the removals. */
async function prune(exec: PgExecutor, record: Checkpoint): Promise<{ removed: number } | null> {
  return exec.transaction(async (transaction) => {
    const [attested] = await transaction.rows<{ hash: string }>(
      `SELECT hash FROM audit_checkpoints WHERE seq = $1::bigint AND kind = 'seal'`,
      [record.throughSeq],
    );
    if (attested?.hash !== record.root) return null;
    if ((await transaction.rows(APPEND, appendValues(record, null))).length === 0) return null;
    const retirements = await transaction.rows<LedgerRowColumns>(
      'SELECT id, type, detail FROM audit_events WHERE type = $1::text',
      [KEY_RETIRED],
    );
    await transaction.exec(`SET LOCAL baton.ledger_prune = 'on'`);
    const [gone] = await transaction.rows<{ n: number }>(
      `WITH d AS (DELETE FROM audit_events WHERE id <= $1::bigint RETURNING 1) SELECT count(*) AS n FROM d`,
      [record.lastId],
    );
    await transaction.rows(`DELETE FROM audit_checkpoints WHERE kind = 'seal' AND seq <= $1::bigint`, [
      record.throughSeq,
    ]);
    await transaction.exec(`SET LOCAL baton.ledger_prune = 'off'`);
    const removed = gone?.n ?? 0;
    await transaction.rows(
      `INSERT INTO audit_events (at, type, detail)
       VALUES (${atMs('$1')}, 'ledger:pruned', jsonb_build_object('checkpoint', $2::bigint,
         'firstId', $3::bigint, 'lastId', $4::bigint, 'rowCount', $5::bigint, 'removed', $6::bigint))`,
      [record.sealedAt, record.seq, record.firstId, record.lastId, record.rowCount, removed],
    );
    for (const restated of retirementsToRestate(retirements, record.lastId)) {
      await transaction.rows(
        `INSERT INTO audit_events (at, type, detail) VALUES (${atMs('$1')}, $2::text, $3::jsonb)`,
        [record.sealedAt, KEY_RETIRED, JSON.stringify(restated)],
      );
    }
    return { removed };
  });
}

type SessionReportRow = shared.SessionReportRow<PgEncoding>;

export function postgresReports(exec: PgExecutor): LedgerStore['reports'] {
  return {
    sessions: async (params = {}) => {
      const values: unknown[] = [params.limit ?? 10_000];
      const where = ['true'];
      const param = (value: unknown, type: string): string => `$${values.push(value)}::${type}`;
      if (params.since !== undefined)
        where.push(`(ended_at IS NULL OR ended_at >= ${atMs(param(params.since, 'bigint'))})`);
      if (params.until !== undefined) where.push(`started_at < ${atMs(param(params.until, 'bigint'))}`);
      if (params.host !== undefined) where.push(`host = ${param(params.host, 'text')}`);
      const rows = await exec.rows<SessionReportRow>(
        `SELECT * FROM session_report WHERE ${where.join(' AND ')} ORDER BY session LIMIT $1::int`,
        values,
      );
      return rows.map((row) => sessionReportOf(PG, row));
    },
  };
}
