/** API tokens on SQLite (token-store.ts): each change one write transaction with its ledger row. */
import type { TokenStore } from '../token-store.js';
import {
  TOKEN_COLUMNS,
  bindingsOf,
  createdDetail,
  freshToken,
  hashSecret,
  sessionRefusal,
  tokenNotFound,
  toToken,
  type TokenRow,
} from '../token-secret.js';
import { appendAudit } from './rows.js';
import type { SqliteRunner, Sync } from './runner.js';

export function sqliteTokens(run: SqliteRunner): Sync<TokenStore['tokens']> {
  return {
    create: (p) => {
      const { session, host } = bindingsOf(p);
      const fresh = freshToken();
      return run.write(() => {
        const now = run.now();
        if (session !== null) {
          const s = run.prepare('SELECT state FROM sessions WHERE id = ?').get(session) as
            { state: string } | undefined;
          if (s?.state !== 'live') throw sessionRefusal(session, s?.state ?? null);
        }
        const row = run
          .prepare(
            `INSERT INTO tokens (id, hash, scope, session_id, host, name, created_at, expires_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${TOKEN_COLUMNS}`,
          )
          .get(
            fresh.id,
            fresh.hash,
            p.scope,
            session,
            host,
            p.name ?? null,
            now,
            p.ttlMs === null || p.ttlMs === undefined ? null : now + p.ttlMs,
          ) as TokenRow;
        const token = toToken(row);
        appendAudit(run, { at: now, type: 'token:created', detail: createdDetail(token) });
        return { token, secret: fresh.secret };
      });
    },
    verify: (secret) =>
      run.read(() => {
        const row = run
          .prepare(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE hash = ?`)
          .get(hashSecret(secret)) as TokenRow | undefined;
        if (row === undefined) return { ok: false, reason: 'unknown' } as const;
        if (row.revoked_at !== null) return { ok: false, reason: 'revoked' } as const;
        if (row.expires_at !== null && row.expires_at <= run.now())
          return { ok: false, reason: 'expired' } as const;
        return { ok: true, token: toToken(row) } as const;
      }),
    list: () =>
      run.read(() =>
        (run.prepare(`SELECT ${TOKEN_COLUMNS} FROM tokens ORDER BY created_at, id`).all() as TokenRow[]).map(
          toToken,
        ),
      ),
    revoke: (id) =>
      run.write(() => {
        const row = run.prepare('SELECT revoked_at FROM tokens WHERE id = ?').get(id) as
          { revoked_at: number | null } | undefined;
        if (row === undefined) throw tokenNotFound(id);
        if (row.revoked_at !== null) return false;
        const now = run.now();
        run.prepare('UPDATE tokens SET revoked_at = ? WHERE id = ?').run(now, id);
        appendAudit(run, { at: now, type: 'token:revoked', detail: { id } });
        return true;
      }),
    refused: (r) =>
      run.write(() => {
        appendAudit(run, {
          at: run.now(),
          type: 'auth:refused',
          key: r.key ?? null,
          jobId: r.jobId ?? null,
          session: r.session ?? null,
          detail: { token: r.token, route: r.route, target: r.target, reason: r.reason },
        });
      }),
  };
}
