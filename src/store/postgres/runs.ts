/**
 * A run's beginning on PostgreSQL (run-store.ts) in one statement, so one round trip and one
 * commit: `j` starts the job, guarded by (session, epoch) as jobs.start; `s` makes the agent's
 * session only if `j` matched; `t` grants the claim to it, guarded as claims.acquire's grant (the
 * task open and unheld; the row lock and the EvalPlanQual re-check make the second of two racing
 * claimers match nothing); their ledger rows go in one ordered insert. A grant that matched
 * nothing (held, an expired holder, the task no longer open or unknown) is then judged by
 * claims.acquire itself, for the session just made: the start and the session stand. Asked for,
 * `k` mints the agent's token for the granted claim (its secret made here, only its hash sent),
 * its `token:created` row after `claim:granted`; after a grant by claims.acquire, tokens.create's
 * statement makes it.
 */
import { assert } from '../../core/assert.js';
import type { ClaimResult } from '../../core/claim.js';
import type { RunBeginResult, RunStore } from '../run-store.js';
import { freshToken, toToken, type TokenRow } from '../token-secret.js';
import type { TokenCreated } from '../token-store.js';
import { acquireClaim } from './claims.js';
import type { PgExecutor } from './executor.js';
import { lostOr } from './jobs.js';
import { insertAuditRows } from './locks.js';
import { createToken } from './tokens.js';
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

/**
 * $1 job, $2 runner session, $3 job epoch; $4-$8 the agent's session, as sessions.start's; $9 the
 * task; $10-$12 the token's id, hash and name, or NULL for none.
 */
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
), k AS (
  INSERT INTO tokens (id, hash, scope, session_id, name, created_at, job_id, job_epoch, claim_epoch)
  SELECT $10::text, $11::text, 'agent', t.session_id, $12::text, n.t, j.id, j.epoch, t.epoch
  FROM t, j, n WHERE $10::text IS NOT NULL
  RETURNING id, scope, session_id, host, name, created_at
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
    FROM t
    UNION ALL
    SELECT 3, '', k.created_at, 'token:created', NULL, NULL, NULL, NULL, NULL,
      jsonb_build_object('id', k.id, 'scope', k.scope, 'session', k.session_id, 'host', k.host, 'name', k.name,
        'expiresAt', NULL)
    FROM k`)}
)
SELECT j.*, ${SESSION_NAMES.map((name) => `s.${name} AS s_${name}`).join(', ')},
  ${CLAIM_NAMES.map((name) => `g.${name} AS c_${name}`).join(', ')},
  k.id AS k_id, k.scope AS k_scope, k.session_id AS k_session_id, k.host AS k_host, k.name AS k_name,
  (extract(epoch FROM k.created_at) * 1000)::float8 AS k_created_at
FROM j CROSS JOIN s LEFT JOIN k ON true
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
      const fresh = params.token === undefined ? null : freshToken();
      const values = [job.id, job.session, job.epoch, agent.kind, agent.host, agent.pid, agent.name ?? null];
      values.push(agent.ttlMs ?? null, params.key, fresh?.id ?? null, fresh?.hash ?? null);
      values.push(params.token?.name ?? null);
      const [row] = await exec.rows<BeginRow>(BEGIN, values);
      if (row === undefined) {
        const lost = await lostOr(exec, job.id, undefined);
        assert(!lost.ok, 'a start that matched no row is lost');
        return { ok: false, start: lost };
      }
      const session = toSession(part<SessionRow>(row, 's_', SESSION_NAMES));
      const started = toJob(row);
      if (row.c_key !== null && row.c_key !== undefined) {
        const claim = {
          ok: true,
          claim: toClaim(part<ClaimRow>(row, 'c_', CLAIM_NAMES)),
          granted: true,
        } as const;
        const token = fresh === null ? null : minted(row, fresh.secret, params.key);
        return { ok: true, job: started, session, claim, token };
      }
      const claim: ClaimResult | Error = await acquireClaim(exec, {
        key: params.key,
        session: session.id,
      }).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      let token: TokenCreated | null = null;
      if (params.token !== undefined && !(claim instanceof Error) && claim.ok && claim.granted) {
        const run = { jobId: started.id, jobEpoch: started.epoch, claimEpoch: claim.claim.epoch };
        token = await createToken(exec, {
          scope: 'agent',
          session: session.id,
          run,
          name: params.token.name,
        });
      }
      return { ok: true, job: started, session, claim, token };
    },
  };
}

/** The token `k` made, with the secret only this process knows. */
function minted(row: BeginRow, secret: string, key: string): TokenCreated {
  assert(row.k_id !== null && row.k_id !== undefined, 'a granted claim asked for a token has one');
  const token = toToken({
    ...part<TokenRow>(row, 'k_', ['id', 'scope', 'session_id', 'host', 'name', 'created_at']),
    expires_at: null,
    revoked_at: null,
    task_key: key,
  });
  return { token, secret };
}
