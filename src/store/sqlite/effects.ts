/**
 * Fenced side effects on SQLite: the check and the append are one BEGIN IMMEDIATE transaction,
 * so no grant or release can come between them (SQLite admits one writer at a time).
 */
import {
  encodeEffectPayload,
  validateEffectKind,
  type Effect,
  type EffectResult,
} from '../../core/effect.js';
import { NotFoundError } from '../../core/errors.js';
import type { EffectsStore } from '../effects-store.js';
import type { TestSwitches } from '../test-switches.js';
import type * as shared from '../run-rows.js';
import { effectOf } from '../run-rows.js';
import { SQLITE, appendAudit, holderOf, type SqliteEncoding } from './rows.js';
import { fromSync, type SqliteExecutor } from './executor.js';
import { sessionRow, taskRow } from './tasks-claims.js';

type EffectRow = shared.EffectRow<SqliteEncoding>;
const toEffect = (row: EffectRow): Effect => effectOf(SQLITE, row);

export function sqliteEffects(exec: SqliteExecutor, switches: TestSwitches): EffectsStore['effects'] {
  return fromSync<EffectsStore['effects']>({
    record: (params) =>
      exec.write((): EffectResult => {
        const kind = validateEffectKind(params.kind);
        const payload = encodeEffectPayload(params.payload);
        const task = taskRow(exec, params.key);
        if (task === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
        const session = sessionRow(exec, params.session, false);
        const live =
          session.state === 'live' &&
          task.holder_session_id === params.session &&
          task.epoch === params.epoch;
        if (switches.fencing && !live) {
          const current = holderOf(exec, task.id);
          // An ended (or rescued) session is told so, as its release is.
          if (session.state !== 'live') return { ok: false, reason: 'fenced', current, sessionEnded: true };
          return { ok: false, reason: 'fenced', current };
        }
        const now = exec.now();
        const row = exec
          .prepare(
            `INSERT INTO effects (task_id, session_id, epoch, kind, payload, recorded_at)
             VALUES (?, ?, ?, ?, ?, ?)
             RETURNING id, ? AS key, session_id, epoch, kind, payload, recorded_at`,
          )
          .get(task.id, params.session, params.epoch, kind, payload, now, params.key) as EffectRow;
        appendAudit(exec, {
          at: now,
          type: 'effect:recorded',
          key: params.key,
          session: params.session,
          epoch: params.epoch,
          detail: { effect: row.id, kind },
        });
        switches.insideEffectWrite?.();
        return { ok: true, effect: toEffect(row) };
      }),
    list: (params) =>
      exec.read(() =>
        (
          exec
            .prepare(
              `SELECT e.id, t.key, e.session_id, e.epoch, e.kind, e.payload, e.recorded_at
               FROM effects e JOIN tasks t ON t.id = e.task_id
               WHERE t.key = ? AND e.id > ? ORDER BY e.id LIMIT ?`,
            )
            .all(params.key, params.afterId ?? 0, params.limit ?? 1000) as EffectRow[]
        ).map(toEffect),
      ),
  });
}
