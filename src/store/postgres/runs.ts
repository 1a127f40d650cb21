/**
 * A run's beginning on PostgreSQL (run-store.ts) in one statement, so one round trip and one
 * commit: `j` starts the job, guarded by (session, epoch) as jobs.start; `s` makes the agent's
 * session only if `j` matched; `t` grants the claim to it, guarded as claims.acquire's grant (the
 * task open and unheld; the row lock and the EvalPlanQual re-check make the second of two racing
 * claimers match nothing); their ledger rows go in one ordered insert. A grant that matched
 * nothing (held, an expired holder, the task no longer open or unknown) is then judged by
 * claims.acquire itself, for the session just made: the start and the session stand.
 */
import { assert } from '../../core/assert.js';
import type { ClaimResult } from '../../core/claim.js';
import type { RunBeginResult, RunStore } from '../run-store.js';
import { acquireClaim } from './claims.js';
import type { PgExecutor } from './executor.js';
import { lostOr } from './jobs.js';
import { insertAuditRows } from './locks.js';
import {
  hostOf,
  jobColumns,
  NOW,
  SESSION_COLUMNS,
  taskGrantSet,
  toClaim,
  toJob,
  toSession,
  type ClaimRow,
  type JobRow,
  type SessionRow,
} from './rows.js';

const SESSION_NAMES = SESSION_COLUMNS.split(', ');
const CLAIM_NAMES = ['key', 'session_id', 'epoch', 'claimed_at', 'heartbeat_at', 'released_at', 'outcome'];

/** $1 job, $2 runner session, $3 job epoch; $4-$8 the agent's session, as sessions.start's; $9 the task. */
const BEGIN = `WITH n AS (SELECT ${NOW} AS t), j AS (
  UPDATE jobs SET status = 'running', started_at = n.t
  FROM n
  WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint AND status = 'claimed'
  RETURNING ${jobColumns('jobs')}
), s AS (
  INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at, ttl_ms)
  SELECT $4::text, $5::text, $6::int, $7::text, n.t, n.t, $8::bigint FROM n
  WHERE EXISTS (SELECT 1 FROM j)
  RETURNING ${SESSION_COLUMNS}
), t AS (
  UPDATE tasks SET ${taskGrantSet('s.id', 'n.t')}
  FROM s, n
  WHERE tasks.key = $9::text AND tasks.holder_session_id IS NULL AND tasks.state = 'open'
  RETURNING tasks.id, tasks.key, tasks.epoch, tasks.claimed_at, s.id AS session_id, s.host
), c AS (
  INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
  SELECT id, session_id, epoch, claimed_at, claimed_at FROM t
  RETURNING task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, j.started_at AS at, 'job:started'::text AS type, j.key AS task_key,
      j.id AS job_id, $2::bigint AS session_id, ${hostOf('$2::bigint')} AS host, $3::bigint AS epoch,
      '{}'::jsonb AS detail
    FROM j
    UNION ALL
    SELECT 1, '', s.started_at, 'session:started', NULL, NULL, s.id, s.host, NULL,
      jsonb_build_object('kind', s.kind, 'pid', s.pid)
        || CASE WHEN s.ttl_ms IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('ttlMs', s.ttl_ms) END
    FROM s
    UNION ALL
    SELECT 2, '', t.claimed_at, 'claim:granted', t.key, NULL, t.session_id, t.host, t.epoch, '{}'::jsonb
    FROM t`)}
)
SELECT j.*, ${SESSION_NAMES.map((name) => `s.${name} AS s_${name}`).join(', ')},
  ${CLAIM_NAMES.map((name) => `g.${name} AS c_${name}`).join(', ')}
FROM j CROSS JOIN s
LEFT JOIN (SELECT t.key, c.session_id, c.epoch, c.claimed_at, c.heartbeat_at, c.released_at, c.outcome
  FROM c JOIN t ON t.id = c.task_id) g ON true`;

type BeginRow = JobRow & Record<string, unknown>;

/** The columns of `row` named `prefix` + name, under their names. */
function part<R>(row: BeginRow, prefix: string, names: readonly string[]): R {
  return Object.fromEntries(names.map((name) => [name, row[`${prefix}${name}`]])) as R;
}

export function postgresRuns(exec: PgExecutor): RunStore['runs'] {
  return {
    begin: async (params): Promise<RunBeginResult> => {
      const { job } = params;
      const agent = params.session;
      const values = [job.id, job.session, job.epoch, agent.kind, agent.host, agent.pid, agent.name ?? null];
      values.push(agent.ttlMs ?? null, params.key);
      const [row] = await exec.rows<BeginRow>(BEGIN, values);
      if (row === undefined) {
        const lost = await lostOr(exec, job.id, undefined);
        assert(!lost.ok, 'a start that matched no row is lost');
        return { ok: false, start: lost };
      }
      const session = toSession(part<SessionRow>(row, 's_', SESSION_NAMES));
      const started = toJob(row);
      let claim: ClaimResult | Error;
      if (row.c_key !== null && row.c_key !== undefined) {
        claim = { ok: true, claim: toClaim(part<ClaimRow>(row, 'c_', CLAIM_NAMES)), granted: true };
      } else {
        claim = await acquireClaim(exec, { key: params.key, session: session.id }).catch((error: unknown) =>
          error instanceof Error ? error : new Error(String(error)),
        );
      }
      return { ok: true, job: started, session, claim };
    },
  };
}
