/**
 * A run's beginning on SQLite (run-store.ts): the job's start, the agent's session, the claim and,
 * asked for, the agent's token, in one write transaction (grouped with writes sent in the same
 * turn, SqliteExecutor.grouped): one fsync. The claim's refusals and errors are returned: the
 * start and the session stand, as on PostgreSQL. `placeAndBegin` places the job first, in the same
 * transaction, as dispatch.place does (the term checked, then the placement), then begins it.
 */
import { assert } from '../../core/assert.js';
import type { ClaimResult } from '../../core/claim.js';
import type { RunBeginParams, RunBeginResult, RunStore } from '../run-store.js';
import type { JobGuardParams } from '../store.js';
import type { TokenCreated } from '../token-store.js';
import { sqliteClaims } from './claims.js';
import { placeOne, termIsCurrent } from './dispatch.js';
import type { SqliteExecutor } from './executor.js';
import { startIn } from './jobs.js';
import { startSessionIn } from './tasks-claims.js';
import { createTokenIn } from './tokens.js';

export function sqliteRuns(exec: SqliteExecutor): RunStore['runs'] {
  const claims = sqliteClaims(exec);
  /** The begin's steps inside the caller's write transaction. */
  const beginIn = (guard: JobGuardParams, params: Omit<RunBeginParams, 'job'>): RunBeginResult => {
    const start = startIn(exec, guard);
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
  };
  return {
    begin: (params) => exec.grouped(() => beginIn(params.job, params)),
    placeAndBegin: (params) =>
      exec.grouped(() => {
        const now = exec.now();
        const at = exec.prepare('SELECT epoch FROM jobs WHERE id = ?').get(params.id) as
          { epoch: number } | undefined;
        const served = exec.prepare('SELECT session_id FROM hosts WHERE name = ?').get(params.host) as
          { session_id: number | null } | undefined;
        if (at?.epoch !== params.epoch || served?.session_id !== params.runner)
          return { placed: false } as const;
        if (!termIsCurrent(exec, params.term, now)) return { placed: false } as const;
        const placed = placeOne(exec, now, { id: params.id, host: params.host, term: params.term });
        if (!placed.ok || placed.job.session === null) return { placed: false } as const;
        const begun = beginIn(
          { id: placed.job.id, session: placed.job.session, epoch: placed.job.epoch },
          params,
        );
        assert(begun.ok, 'a job placed in this transaction starts in it');
        return { placed: true, ...begun } as const;
      }),
  };
}
