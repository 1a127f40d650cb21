/** API tokens on PostgreSQL (token-store.ts): each change one statement with its ledger row. */
import { assert } from '../../core/assert.js';
import type { TokenStore } from '../token-store.js';
import {
  bindingsOf,
  freshToken,
  hashSecret,
  sessionRefusal,
  tokenNotFound,
  toToken,
  type TokenRow,
} from '../token-secret.js';
import { NOW, hostOf } from './rows.js';
import type { PgRunner } from './runner.js';

const msOf = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::float8`;
const COLUMNS = (t: string): string =>
  `${t}.id, ${t}.scope, ${t}.session_id, ${t}.host, ${t}.name, ${msOf(`${t}.created_at`)} AS created_at,
   ${msOf(`${t}.expires_at`)} AS expires_at, ${msOf(`${t}.revoked_at`)} AS revoked_at`;

export function postgresTokens(run: PgRunner): TokenStore['tokens'] {
  return {
    create: async (p) => {
      const { session, host } = bindingsOf(p);
      const fresh = freshToken();
      const row = await run.one<Partial<TokenRow> & { session_state: string | null }>(
        `WITH n AS (SELECT ${NOW} AS t),
         s AS (SELECT state FROM sessions WHERE id = $4::bigint),
         ins AS (
           INSERT INTO tokens (id, hash, scope, session_id, host, name, created_at, expires_at)
           SELECT $1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text, n.t,
             n.t + $7::float8 * interval '1 millisecond'
           FROM n WHERE $4::bigint IS NULL OR (SELECT state FROM s) = 'live'
           RETURNING *
         ), a AS (
           INSERT INTO audit_events (at, type, detail)
           SELECT created_at, 'token:created', jsonb_build_object('id', id, 'scope', scope,
             'session', session_id, 'host', host, 'name', name, 'expiresAt', ${msOf('expires_at')})
           FROM ins
         )
         SELECT ${COLUMNS('ins')}, (SELECT state FROM s) AS session_state
         FROM (SELECT 1) one LEFT JOIN ins ON true`,
        [fresh.id, fresh.hash, p.scope, session, host, p.name ?? null, p.ttlMs ?? null],
      );
      assert(row !== undefined, 'the statement answers one row');
      if (row.id === null || row.id === undefined) throw sessionRefusal(session ?? 0, row.session_state);
      return { token: toToken(row as TokenRow), secret: fresh.secret };
    },
    verify: async (secret) => {
      const row = await run.one<TokenRow & { expired: boolean }>(
        `SELECT ${COLUMNS('t')}, t.expires_at IS NOT NULL AND t.expires_at <= ${NOW} AS expired
         FROM tokens t WHERE t.hash = $1::text`,
        [hashSecret(secret)],
      );
      if (row === undefined) return { ok: false, reason: 'unknown' };
      if (row.revoked_at !== null) return { ok: false, reason: 'revoked' };
      if (row.expired) return { ok: false, reason: 'expired' };
      return { ok: true, token: toToken(row) };
    },
    list: async () =>
      (await run.rows<TokenRow>(`SELECT ${COLUMNS('t')} FROM tokens t ORDER BY t.created_at, t.id`)).map(
        toToken,
      ),
    revoke: async (id) => {
      const row = await run.one<{ known: number; revoked: number }>(
        `WITH t AS (SELECT id FROM tokens WHERE id = $1::text),
         r AS (
           UPDATE tokens SET revoked_at = ${NOW} WHERE id = $1::text AND revoked_at IS NULL
           RETURNING id, revoked_at
         ), a AS (
           INSERT INTO audit_events (at, type, detail)
           SELECT revoked_at, 'token:revoked', jsonb_build_object('id', id) FROM r
         )
         SELECT (SELECT count(*) FROM t)::int AS known, (SELECT count(*) FROM r)::int AS revoked`,
        [id],
      );
      if (row === undefined || row.known === 0) throw tokenNotFound(id);
      return row.revoked === 1;
    },
    refused: async (r) => {
      await run.rows(
        `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, detail)
         VALUES (${NOW}, 'auth:refused', $5::text, $6::bigint, $7::bigint, ${hostOf('$7::bigint')},
           jsonb_build_object('token', $1::text, 'route', $2::text, 'target', $3::text, 'reason', $4::text))`,
        [r.token, r.route, r.target, r.reason, r.key ?? null, r.jobId ?? null, r.session ?? null],
      );
    },
  };
}
