/**
 * Fenced side effects on PostgreSQL, in one statement. The writer's session row is locked
 * FOR KEY SHARE first and the task row FOR SHARE second (the kernel's lock order: session before
 * task). Under READ COMMITTED a row lock that had to wait re-checks the guard against the newest
 * row version, so an effect racing a re-claim, a release, a session end or a rescue either
 * commits before it (and the other waits for it) or sees it and is refused; the guard reads the
 * task's lock word (holder, epoch), never the claims history through an older snapshot.
 *
 * Both locks are taken before the effect and its ledger row draw their ids, so on one task the
 * ledger's id order of grants and effects is their commit order: the checkers rely on that.
 */
import { encodeEffectPayload, validateEffectKind, type Effect } from '../../core/effect.js';
import { NotFoundError } from '../../core/errors.js';
import type { EffectsStore } from '../effects-store.js';
import type { TestSwitches } from '../test-switches.js';
import type * as shared from '../run-rows.js';
import { effectOf } from '../run-rows.js';
import { NOW, PG, claimState, holderOf, type PgEncoding } from './rows.js';
import type { PgExecutor } from './executor.js';

type EffectRow = shared.EffectRow<PgEncoding>;
const toEffect = (row: EffectRow): Effect => effectOf(PG, row);

const EFFECT_COLUMNS = 'e.id, t.key, e.session_id, e.epoch, e.kind, e.payload, e.recorded_at';

/** The guarded append; with fencing off (a test switch) the guard is simply absent. */
function recordSql(fencing: boolean): string {
  const live = fencing ? `AND state = 'live'` : '';
  const held = fencing ? 'AND tasks.holder_session_id = s.id AND tasks.epoch = $3::bigint' : '';
  return `WITH s AS (
      SELECT id, host FROM sessions WHERE id = $2::bigint ${live} FOR KEY SHARE
    ), t AS (
      SELECT tasks.id, tasks.key, s.id AS session_id, s.host FROM tasks, s
      WHERE tasks.key = $1::text ${held}
      FOR SHARE OF tasks
    ), e AS (
      INSERT INTO effects (task_id, session_id, epoch, kind, payload, recorded_at)
      SELECT id, session_id, $3::bigint, $4::text, $5::jsonb, ${NOW} FROM t
      RETURNING id, task_id, session_id, epoch, kind, payload, recorded_at
    ), a AS (
      INSERT INTO audit_events (at, type, task_key, session_id, host, epoch, detail)
      SELECT e.recorded_at, 'effect:recorded', t.key, e.session_id, t.host, e.epoch,
        jsonb_build_object('effect', e.id, 'kind', e.kind)
      FROM e JOIN t ON t.id = e.task_id
    )
    SELECT ${EFFECT_COLUMNS} FROM e JOIN t ON t.id = e.task_id`;
}

export function postgresEffects(exec: PgExecutor, switches: TestSwitches): EffectsStore['effects'] {
  const sql = recordSql(switches.fencing);
  return {
    record: async (params) => {
      const kind = validateEffectKind(params.kind);
      const payload = encodeEffectPayload(params.payload);
      const row = await exec.one<EffectRow>(sql, [params.key, params.session, params.epoch, kind, payload]);
      if (row !== undefined) return { ok: true, effect: toEffect(row) };
      const state = await claimState(exec, params.key, params.session);
      if (state.task_id === null) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
      if (state.session_state === null) {
        throw new NotFoundError('session', String(params.session), 'start one with `baton session start`');
      }
      // An ended (or rescued) session is told so, as its release is.
      if (state.session_state !== 'live') {
        return { ok: false, reason: 'fenced', current: holderOf(state), sessionEnded: true };
      }
      return { ok: false, reason: 'fenced', current: holderOf(state) };
    },
    list: async (params) =>
      (
        await exec.rows<EffectRow>(
          `SELECT ${EFFECT_COLUMNS} FROM effects e JOIN tasks t ON t.id = e.task_id
           WHERE t.key = $1::text AND e.id > $2::bigint ORDER BY e.id LIMIT $3::int`,
          [params.key, params.afterId ?? 0, params.limit ?? 1000],
        )
      ).map(toEffect),
  };
}
