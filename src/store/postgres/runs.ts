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
 * statement makes it. `placeAndBegin` is the same statement with a placement in place of the
 * start: the job queued, placed on the host's runner session under the term and started at once.
 */
import { assert } from '../../core/assert.js';
import type { ClaimResult } from '../../core/claim.js';
import type { RunBeginParams, RunBeginResult, RunPlaceBeginResult, RunStore } from '../run-store.js';
import { freshToken, toToken, type TokenRow } from '../token-secret.js';
import type { TokenCreated } from '../token-store.js';
import { acquireClaim } from './claims.js';
import type { PgExecutor } from './executor.js';
import { lostOr } from './jobs.js';
import { insertAuditRows } from './locks.js';
import { createToken } from './tokens.js';
import { claimSet, jobTaskOpen } from './claim-set.js';
import { LIVE_TERM, termParams } from './placement.js';
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
 * A run's statement once `n` (the time) and `j` (the started job) are given as `jobCtes`: `s` makes
 * the agent's session only if `j` matched (params `first` to `first`+4, as sessions.start's), `t`
 * and `c` grant it the claim on the task `first`+5, `k` mints the token (`first`+6 to `first`+8,
 * or NULL for none), and `a` writes the ledger rows in order: the job's own (`jobRows`, parts 0
 * and 1), then the session, the claim and the token. One row out: the job, session, claim, token.
 */
function runStatement(jobCtes: string, jobRows: string, first: number): string {
  const param = (offset: number): string => `$${first + offset}`;
  return `WITH n AS (SELECT ${NOW} AS t), ${jobCtes}, s AS (
  INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at, ttl_ms)
  SELECT ${param(0)}::text, ${param(1)}::text, ${param(2)}::int, ${param(3)}::text, n.t, n.t, ${param(4)}::bigint FROM n
  WHERE EXISTS (SELECT 1 FROM j)
  RETURNING ${SESSION_COLUMNS}
), t AS (
  UPDATE tasks SET ${taskGrantSet('s.id', 'n.t')}
  FROM s, n
  WHERE tasks.key = ${param(5)}::text AND tasks.holder_session_id IS NULL AND tasks.state = 'open'
  RETURNING tasks.id, tasks.key, tasks.epoch, tasks.claimed_at, s.id AS session_id, s.host
), c AS (
  INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
  SELECT id, session_id, epoch, claimed_at, claimed_at FROM t
  RETURNING task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome
), k AS (
  INSERT INTO tokens (id, hash, scope, session_id, name, created_at, job_id, job_epoch, claim_epoch)
  SELECT ${param(6)}::text, ${param(7)}::text, 'agent', t.session_id, ${param(8)}::text, n.t, j.id, j.epoch, t.epoch
  FROM t, j, n WHERE ${param(6)}::text IS NOT NULL
  RETURNING id, scope, session_id, host, name, created_at
), a AS (
  ${insertAuditRows(`${jobRows}
    UNION ALL
    SELECT 2, '', s.started_at, 'session:started', NULL, NULL, s.id, s.host, NULL,
      jsonb_build_object('kind', s.kind, 'pid', s.pid)
        || CASE WHEN s.ttl_ms IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('ttlMs', s.ttl_ms) END
    FROM s
    UNION ALL
    SELECT 3, '', t.claimed_at, 'claim:granted', t.key, NULL, t.session_id, t.host, t.epoch, '{}'::jsonb
    FROM t
    UNION ALL
    SELECT 4, '', k.created_at, 'token:created', NULL, NULL, NULL, NULL, NULL,
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
}

/** The job's `job:started` row (part 0), by its runner session $2 at its epoch $3. */
const STARTED_ROW = `
    SELECT 0 AS part, ''::text AS seq, j.started_at AS at, 'job:started'::text AS type, j.key AS task_key,
      j.id AS job_id, $2::bigint AS session_id, ${hostOf('$2::bigint')} AS host, $3::bigint AS epoch,
      '{}'::jsonb AS detail
    FROM j`;

/** $1 job, $2 runner session, $3 job epoch; then the run's parameters from $4 (runStatement). */
const BEGIN = runStatement(
  `j AS (
  UPDATE jobs SET status = 'running', started_at = n.t
  FROM n
  WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint AND status = 'claimed'
  RETURNING ${jobColumns('jobs')}
)`,
  STARTED_ROW,
  4,
);

/**
 * A placement that starts the job ($1-$3 the term, $4 the job, $5 the host, $6 the job's epoch as
 * read, $7 the caller's runner session, which must be the host's), locked and judged as
 * placement.ts's for a job without a workspace: the live term FOR SHARE, then the host's live
 * runner session FOR KEY SHARE, then the job FOR UPDATE (queued at that epoch, due, its task
 * taking jobs; after a wait re-checked on its newest version); `j`
 * claims it for that session under the term and starts it in the same update (one statement
 * cannot update a row twice), with `job:placed` then `job:started` in the ledger, as a placement
 * and a start write them apart. The run's parameters from $8 (runStatement).
 */
const PLACE_BEGIN = runStatement(
  `${LIVE_TERM}, h AS (
  SELECT h.name, h.session_id FROM hosts h JOIN sessions hs ON hs.id = h.session_id
  WHERE h.name = $5::text AND h.session_id = $7::bigint AND h.enabled AND hs.state = 'live'
    AND EXISTS (SELECT 1 FROM l)
  FOR KEY SHARE OF hs
), q AS (
  SELECT jobs.id FROM jobs
  WHERE jobs.id = $4::bigint AND jobs.epoch = $6::bigint AND jobs.status = 'queued' AND jobs.run_after <= ${NOW}
    AND ${jobTaskOpen('jobs')} AND EXISTS (SELECT 1 FROM h)
  FOR UPDATE OF jobs
), j AS (
  UPDATE jobs SET ${claimSet({ session: 'h.session_id', host: 'h.name', now: 'n.t', start: 'true', term: 'l.term' })}
  FROM l, h, n
  WHERE jobs.id IN (SELECT q.id FROM q) AND jobs.status = 'queued' AND jobs.epoch = $6::bigint
  RETURNING ${jobColumns('jobs')}
)`,
  `
    SELECT 0 AS part, '0'::text AS seq, j.claimed_at AS at, 'job:placed'::text AS type, j.key AS task_key,
      j.id AS job_id, j.session_id, ${hostOf('j.session_id')} AS host, j.epoch,
      jsonb_build_object('host', j.host, 'term', $3::bigint, 'attempt', j.attempt) AS detail
    FROM j
    UNION ALL
    SELECT 1, '', j.started_at, 'job:started', j.key, j.id, j.session_id, ${hostOf('j.session_id')}, j.epoch,
      '{}'::jsonb
    FROM j`,
  8,
);

type BeginRow = JobRow & Record<string, unknown>;

/** The columns of `row` named `prefix` + name, under their names. */
function part<R>(row: BeginRow, prefix: string, names: readonly string[]): R {
  return Object.fromEntries(names.map((name) => [name, row[`${prefix}${name}`]])) as R;
}

export function postgresRuns(exec: PgExecutor): RunStore['runs'] {
  return {
    begin: async (params): Promise<RunBeginResult> => {
      const { job } = params;
      const fresh = params.token === undefined ? null : freshToken();
      const [row] = await exec.rows<BeginRow>(BEGIN, [
        job.id,
        job.session,
        job.epoch,
        ...runValues(params, fresh),
      ]);
      if (row === undefined) {
        const lost = await lostOr(exec, job.id, undefined);
        assert(!lost.ok, 'a start that matched no row is lost');
        return { ok: false, start: lost };
      }
      return begun(exec, row, params, fresh);
    },
    placeAndBegin: async (params): Promise<RunPlaceBeginResult> => {
      const fresh = params.token === undefined ? null : freshToken();
      const values = [
        ...termParams(params.term),
        params.id,
        params.host,
        params.epoch,
        params.runner,
        ...runValues(params, fresh),
      ];
      const [row] = await exec.rows<BeginRow>(PLACE_BEGIN, values);
      if (row === undefined) return { placed: false };
      return { placed: true, ...(await begun(exec, row, params, fresh)) };
    },
  };
}

/** runStatement's parameters: the agent's session, the task, the token (or NULLs). */
function runValues(
  params: Omit<RunBeginParams, 'job'>,
  fresh: ReturnType<typeof freshToken> | null,
): unknown[] {
  const agent = params.session;
  return [agent.kind, agent.host, agent.pid, agent.name ?? null, agent.ttlMs ?? null, params.key].concat([
    fresh?.id ?? null,
    fresh?.hash ?? null,
    params.token?.name ?? null,
  ]);
}

/**
 * A started run's answer from its row: the claim the statement granted, with its token; or, when
 * it granted none, claims.acquire's own answer for the new session (then tokens.create's token).
 */
async function begun(
  exec: PgExecutor,
  row: BeginRow,
  params: Omit<RunBeginParams, 'job'>,
  fresh: ReturnType<typeof freshToken> | null,
): Promise<Extract<RunBeginResult, { ok: true }>> {
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
    token = await createToken(exec, { scope: 'agent', session: session.id, run, name: params.token.name });
  }
  return { ok: true, job: started, session, claim, token };
}

/** The token `k` made, with the secret only this process knows. */
function minted(row: BeginRow, secret: string, key: string): TokenCreated {
  assert(row.k_id !== null && row.k_id !== undefined, 'a granted claim asked for a token has one');
  const token = toToken({
    ...part<TokenRow>(row, 'k_', ['id', 'scope', 'session_id', 'host', 'name', 'created_at']),
    expires_at: null,
    revoked_at: null,
    revoked_by: null,
    login_of: null,
    task_key: key,
  });
  return { token, secret };
}
