/**
 * The token a request acts with, carried through the async calls it makes (AsyncLocalStorage).
 * Every ledger row written while it is set records it in `audit_events.token_id`: on SQLite the
 * row's insert reads it; on PostgreSQL the column's default reads the connection's
 * `baton.token` setting, which the executor (postgres/executor.ts) sets on the connection before
 * the statement. So the ledger says which token acted without every store method taking one more
 * parameter.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const acting = new AsyncLocalStorage<string | typeof ANY>();
const ANY = Symbol('any token');

/** Runs `work` with every ledger row it writes credited to this token id. */
export function actingAs<T>(tokenId: string, work: () => Promise<T>): Promise<T> {
  return acting.run(tokenId, work);
}

/**
 * Runs a read that writes no ledger row (a token's own check) without changing which token a
 * PostgreSQL connection carries: a request's check and its work then need no setting in between.
 */
export function asAnyone<T>(work: () => Promise<T>): Promise<T> {
  return acting.run(ANY, work);
}

/**
 * Runs `work` acting with no token: the ledger rows it writes record none (a row of the process's
 * own, as the summary of refusals not written). Not asAnyone, which is for reads: on PostgreSQL it
 * leaves the connection carrying whichever token used it last, and a row would be credited to it.
 */
export function actingAsNoToken<T>(work: () => Promise<T>): Promise<T> {
  return acting.exit(work);
}

/** The token id the current call acts with, or null. */
export function actingToken(): string | null {
  const actor = acting.getStore();
  return actor === undefined || actor === ANY ? null : actor;
}

/** Whether the current call may leave a connection's token as it finds it (asAnyone). */
export function actingAsAnyone(): boolean {
  return acting.getStore() === ANY;
}

/**
 * A ledger row's detail with `by`, who asked in words (`alice@box`, `token t1`), when the caller
 * named them (issue 14, item 11); left as it is otherwise.
 */
export function withActor(
  detail: Record<string, unknown>,
  actor: string | undefined,
): Record<string, unknown> {
  return actor === undefined ? detail : { ...detail, by: actor };
}
