/**
 * A run's beginning on SQLite (run-store.ts): the job's start, the agent's session, the claim and,
 * asked for, the agent's token, in one write transaction (grouped with writes sent in the same
 * turn, SqliteExecutor.grouped): one fsync. The claim's refusals and errors are returned: the
 * start and the session stand, as on PostgreSQL.
 */
import type { ClaimResult } from '../../core/claim.js';
import type { RunBeginResult, RunStore } from '../run-store.js';
import type { TokenCreated } from '../token-store.js';
import { sqliteClaims } from './claims.js';
import type { SqliteExecutor } from './executor.js';
import { startIn } from './jobs.js';
import { startSessionIn } from './tasks-claims.js';
import { createTokenIn } from './tokens.js';

export function sqliteRuns(exec: SqliteExecutor): RunStore['runs'] {
  const claims = sqliteClaims(exec);
  return {
    begin: (params) =>
      exec.grouped((): RunBeginResult => {
        const start = startIn(exec, params.job);
        if (!start.ok) return { ok: false, start };
        const session = startSessionIn(exec, params.session);
        let claim: ClaimResult | Error;
        try {
          claim = claims.acquire({ key: params.key, session: session.id });
        } catch (error) {
          claim = error instanceof Error ? error : new Error(String(error));
        }
        let token: TokenCreated | null = null;
        if (params.token !== undefined && !(claim instanceof Error) && claim.ok && claim.granted) {
          const run = { jobId: start.job.id, jobEpoch: start.job.epoch, claimEpoch: claim.claim.epoch };
          token = createTokenIn(exec, { scope: 'agent', session: session.id, run, name: params.token.name });
        }
        return { ok: true, job: start.job, session, claim, token };
      }),
  };
}
