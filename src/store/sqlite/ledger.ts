/**
 * The ledger's checkpoints and the session report on SQLite. One writer at a time commits ids in
 * order (AUTOINCREMENT never reuses or goes back), so every row a reader sees is settled: nothing
 * can commit below it later. Rows are read with `SELECT *`, every column as stored.
 */
import { ConflictError } from '../../core/errors.js';
import type { Checkpoint } from '../../core/ledger.js';
import type { Instant } from '../../core/time.js';
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
import { withActor } from '../actor.js';
import { SQLITE, appendAudit, type SqliteEncoding } from './rows.js';
import { fromSync, type SqliteExecutor } from './executor.js';

type CheckpointRow = CheckpointColumns<Instant>;

const toCheckpoint = (row: CheckpointRow): Checkpoint => checkpointOf(row, (at) => at);

/** The filters given, and only those, so each combination can use an index. */
function rowsWhere(params: Parameters<LedgerStore['ledger']['rows']>[0]): string {
  const where = ['id > @after'];
  if (params.throughId !== undefined) where.push('id <= @through');
  if (params.key !== undefined) where.push('task_key = @key');
  if (params.session !== undefined) where.push('session_id = @session');
  if (params.host !== undefined) where.push('host = @host');
  if (params.type !== undefined) where.push('type = @type');
  if (params.since !== undefined) where.push('at >= @since');
  if (params.until !== undefined) where.push('at < @until');
  return where.join(' AND ');
}

/** Registers a public key with its `ledger:key-added` row; ConflictError when the id exists. */
function addKey(exec: SqliteExecutor, params: Parameters<LedgerStore['ledger']['addKey']>[0]): LedgerKey {
  if (exec.prepare('SELECT 1 FROM ledger_keys WHERE id = ?').get(params.id) !== undefined) {
    throw new ConflictError(`ledger key ${params.id} is registered already`, 'use it, or make a new one');
  }
  const at = exec.now();
  exec
    .prepare('INSERT INTO ledger_keys (id, public_key, added_at) VALUES (?, ?, ?)')
    .run(params.id, params.publicKey, at);
  const detail = withActor({ keyId: params.id, publicKey: params.publicKey }, params.actor);
  appendAudit(exec, { at, type: 'ledger:key-added', detail });
  return { id: params.id, publicKey: params.publicKey, addedAt: at };
}

/** Retires a key with its `ledger:key-retired` row, after the refusals (core/ledger-retirement.ts). */
function retireKey(
  exec: SqliteExecutor,
  params: Parameters<LedgerStore['ledger']['retireKey']>[0],
): KeyRetirement {
  const registered = (exec.prepare('SELECT id FROM ledger_keys').all() as { id: string }[]).map(
    (row) => row.id,
  );
  const retired = new Set(
    (
      exec
        .prepare('SELECT type, detail FROM audit_events WHERE type = ?')
        .all(KEY_RETIRED) as LedgerRowColumns[]
    )
      .map(retiredKeyOf)
      .filter((id) => id !== null),
  );
  const refusal = retirementRefusal(params.id, registered, retired);
  if (refusal !== null) throw refusal;
  const at = exec.now();
  appendAudit(exec, { at, type: KEY_RETIRED, detail: withActor({ keyId: params.id }, params.actor) });
  const row = (exec.prepare('SELECT last_insert_rowid() AS id').get() as { id: number }).id;
  return { keyId: params.id, row, at };
}

/** The newest checkpoint, null before the first. */
function newestCheckpoint(exec: SqliteExecutor): Checkpoint | null {
  const row = exec
    .prepare(`SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq DESC LIMIT 1`)
    .get();
  return row === undefined ? null : toCheckpoint(row as CheckpointRow);
}

/** The last row id a seal covers, 0 before the first seal. */
function sealedThrough(exec: SqliteExecutor): number {
  return (exec.prepare('SELECT coalesce(max(last_id), 0) AS n FROM audit_checkpoints').get() as { n: number })
    .n;
}

/** Writes a checkpoint, with the leaves of its tree when they are kept (null: not kept). */
function insertCheckpoint(exec: SqliteExecutor, checkpoint: Checkpoint, leaves: Uint8Array | null): void {
  exec
    .prepare(
      `INSERT INTO audit_checkpoints (${CHECKPOINT_COLUMNS}, leaves)
         VALUES (@seq, @kind, @firstId, @lastId, @rowCount, @root, @prevHash, @hash, @keyId, @signature,
           @sealedAt, @throughSeq, @leaves)`,
    )
    .run({ ...checkpoint, leaves: leaves === null ? null : Buffer.from(leaves) });
}

/** Follows the newest checkpoint; a seal also starts right after the last sealed row. */
function follows(exec: SqliteExecutor, checkpoint: Checkpoint): boolean {
  const last = newestCheckpoint(exec);
  const chained =
    (last?.seq ?? 0) === checkpoint.seq - 1 && (last === null || last.hash === checkpoint.prevHash);
  return chained && (checkpoint.kind !== 'seal' || checkpoint.firstId === sealedThrough(exec) + 1);
}

export function sqliteLedger(exec: SqliteExecutor): LedgerStore['ledger'] {
  const group = fromSync<Omit<LedgerStore['ledger'], 'append'>>({
    addKey: (params) => exec.write(() => addKey(exec, params)),
    retireKey: (params) => exec.write(() => retireKey(exec, params)),
    keys: () =>
      exec.read(() =>
        (
          exec.prepare('SELECT id, public_key, added_at FROM ledger_keys ORDER BY added_at, id').all() as {
            id: string;
            public_key: string;
            added_at: number;
          }[]
        ).map((row) => ({ id: row.id, publicKey: row.public_key, addedAt: row.added_at })),
      ),
    unsealed: (params) =>
      // One read transaction: the newest checkpoint, the last sealed id and the rows, one snapshot.
      exec.read(() => unsealedIn(exec, params)),
    checkpoints: (params) => exec.read(() => checkpointsIn(exec, params)),
    leaves: (seq) =>
      exec.read(() => {
        const row = exec.prepare('SELECT leaves FROM audit_checkpoints WHERE seq = ?').get(seq) as
          { leaves: Buffer | null } | undefined;
        return row?.leaves == null ? null : leavesView(row.leaves);
      }),
    rows: (params) => exec.read(() => rowsIn(exec, params)),
    newestAt: (firstId, lastId) =>
      exec.read(
        () =>
          (
            exec
              .prepare('SELECT max(at) AS at FROM audit_events WHERE id BETWEEN ? AND ?')
              .get(firstId, lastId) as {
              at: number | null;
            }
          ).at,
      ),
    extent: () =>
      exec.read(() => {
        const row = exec.prepare('SELECT min(id) AS first, max(id) AS last FROM audit_events').get() as {
          first: number | null;
          last: number | null;
        };
        return { firstId: row.first, lastId: row.last };
      }),
    prune: (record) => exec.write(() => pruneIn(exec, record)),
  });
  return {
    ...group,
    // The sealer's one write: it takes its turn between other processes' commits (executor.ts).
    append: (checkpoint, leaves) =>
      exec.writeInTurn(() => {
        if (!follows(exec, checkpoint)) return false;
        insertCheckpoint(exec, checkpoint, leaves);
        return true;
      }),
  };
}

/** ledger.unsealed: the rows past the last seal, with the newest checkpoint. */
function unsealedIn(
  exec: SqliteExecutor,
  params: Parameters<LedgerStore['ledger']['unsealed']>[0],
): Awaited<ReturnType<LedgerStore['ledger']['unsealed']>> {
  return exec.db
    .transaction(() => {
      const through = sealedThrough(exec);
      const rows = exec
        .prepare('SELECT * FROM audit_events WHERE id > ? ORDER BY id LIMIT ?')
        .all(through, params.limit) as LedgerRowColumns[];
      return { newest: newestCheckpoint(exec), sealedThrough: through, rows, now: exec.now() };
    })
    .deferred();
}

/** ledger.checkpoints, in sequence order. */
function checkpointsIn(
  exec: SqliteExecutor,
  params: Parameters<LedgerStore['ledger']['checkpoints']>[0],
): Checkpoint[] {
  return (
    exec
      .prepare(
        `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints
               WHERE seq > ? AND (? IS NULL OR kind = ?) ORDER BY seq LIMIT ?`,
      )
      .all(params.afterSeq, params.kind ?? null, params.kind ?? null, params.limit) as CheckpointRow[]
  ).map(toCheckpoint);
}

/** ledger.rows: the rows after `afterId` that match the filters given, in id order. */
function rowsIn(
  exec: SqliteExecutor,
  params: Parameters<LedgerStore['ledger']['rows']>[0],
): LedgerRowColumns[] {
  return exec.prepare(`SELECT * FROM audit_events WHERE ${rowsWhere(params)} ORDER BY id LIMIT @limit`).all({
    after: params.afterId,
    limit: params.limit,
    ...(params.throughId === undefined ? {} : { through: params.throughId }),
    ...(params.key === undefined ? {} : { key: params.key }),
    ...(params.session === undefined ? {} : { session: params.session }),
    ...(params.host === undefined ? {} : { host: params.host }),
    ...(params.type === undefined ? {} : { type: params.type }),
    ...(params.since === undefined ? {} : { since: params.since }),
    ...(params.until === undefined ? {} : { until: params.until }),
  }) as LedgerRowColumns[];
}

/** ledger.prune, inside the caller's write transaction: null unless the record follows and a seal attests it. */
function pruneIn(exec: SqliteExecutor, record: Checkpoint): { removed: number } | null {
  const attested = exec
    .prepare(`SELECT hash FROM audit_checkpoints WHERE seq = ? AND kind = 'seal'`)
    .get(record.throughSeq) as { hash: string } | undefined;
  if (!follows(exec, record) || attested?.hash !== record.root) return null;
  const retirements = exec
    .prepare('SELECT id, type, detail FROM audit_events WHERE type = ?')
    .all(KEY_RETIRED);
  exec.prepare('UPDATE ledger_prune_gate SET open = 1').run();
  const removed = exec.prepare('DELETE FROM audit_events WHERE id <= ?').run(record.lastId).changes;
  exec.prepare(`DELETE FROM audit_checkpoints WHERE kind = 'seal' AND seq <= ?`).run(record.throughSeq);
  exec.prepare('UPDATE ledger_prune_gate SET open = 0').run();
  insertCheckpoint(exec, record, null);
  const { seq: checkpoint, firstId, lastId, rowCount } = record;
  const detail = { checkpoint, firstId, lastId, rowCount, removed };
  appendAudit(exec, { at: record.sealedAt, type: 'ledger:pruned', detail });
  for (const restated of retirementsToRestate(retirements as LedgerRowColumns[], record.lastId)) {
    appendAudit(exec, { at: record.sealedAt, type: KEY_RETIRED, detail: restated });
  }
  return { removed };
}

type SessionReportRow = shared.SessionReportRow<SqliteEncoding>;

export function sqliteReports(exec: SqliteExecutor): LedgerStore['reports'] {
  return fromSync<LedgerStore['reports']>({
    sessions: (params = {}) =>
      exec.read(() => {
        const where = ['1 = 1'];
        if (params.since !== undefined) where.push('(ended_at IS NULL OR ended_at >= @since)');
        if (params.until !== undefined) where.push('started_at < @until');
        if (params.host !== undefined) where.push('host = @host');
        const rows = exec
          .prepare(`SELECT * FROM session_report WHERE ${where.join(' AND ')} ORDER BY session LIMIT @limit`)
          .all({
            limit: params.limit ?? 10_000,
            ...(params.since === undefined ? {} : { since: params.since }),
            ...(params.until === undefined ? {} : { until: params.until }),
            ...(params.host === undefined ? {} : { host: params.host }),
          }) as SessionReportRow[];
        return rows.map((row) => sessionReportOf(SQLITE, row));
      }),
  });
}
