/** `baton up`'s leader election and the dispatcher it drives, each saying what it does in the log. */
import { DEFAULT_RETRY_POLICY } from '../core/retry.js';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';
import { Dispatcher, rescueLine } from './dispatcher.js';
import { failureLog } from './failure-log.js';
import { LeaderElector, type LostReason } from './leader-elector.js';
import { afterPredecessor } from './succession.js';
import type { UpOptions } from './up-options.js';

/** The leader election and the dispatcher it drives, each saying what it does in the log. */
export function leadership(
  store: Store,
  options: UpOptions,
  clock: Clock,
  log: (line: string) => void,
  holder: string,
): { elector: LeaderElector; dispatcher: Dispatcher } {
  const elector = new LeaderElector({
    store,
    holder,
    clock,
    ttlMs: options.leaseTtlMs,
    retryIntervalMs: options.retryIntervalMs,
  });
  const dispatcher = new Dispatcher({
    store,
    elector,
    holder,
    clock,
    intervalMs: options.pollIntervalMs,
    staleAfterMs: options.staleAfterMs,
    recoveryIntervalMs: options.recoveryIntervalMs,
    policy: DEFAULT_RETRY_POLICY,
  });
  elector.on('gained', (term) => {
    dispatcher.wake();
    // Says whether the previous leader died or stepped down, from the lease's ledger rows.
    const line = `leading the dispatcher, term ${term}`;
    afterPredecessor(store, term).then(
      (after) => log(`${line}${after}`),
      () => log(line),
    );
  });
  elector.on('lost', (term, why, error) => log(steppedDownLine(term, why, error, options.leaseTtlMs)));
  // The database down fails these every round too: throttled as the runner's (failure-log.ts).
  const unreachable = failureLog(log, 'lease renewal failed', clock);
  elector.on('unreachable', (error) => unreachable.failed(error));
  elector.on('reached', () => unreachable.recovered());
  dispatcher.on('placed', (job, term) =>
    log(`placed job ${job.id} ${job.key} on ${job.host ?? '?'} (term ${term})`),
  );
  dispatcher.on('fenced', (term) => log(`a placement under term ${term} was refused: no longer the leader`));
  dispatcher.on('waiting', (job, reason) => log(`job ${job.id} ${job.key}: ${reason}`));
  dispatcher.on('skipped', (job, error) =>
    log(`job ${job.id} ${job.key}: SKIPPED workspace_unresolved: ${error.message}; fix: ${error.hint ?? ''}`),
  );
  dispatcher.on('rescued', (rescue) => log(rescueLine(rescue)));
  // Every failure of a tick, the database's or not, fails the next tick alike: throttled the same.
  const dispatchFailures = failureLog(log, 'dispatch failed', clock);
  dispatcher.on('failed', (error) => dispatchFailures.failed(error));
  dispatcher.on('ticked', () => dispatchFailures.recovered());
  return { elector, dispatcher };
}

/** The line of a step-down; one whose lease could not be resigned says it lasts until its TTL. */
function steppedDownLine(term: number, why: LostReason, error: unknown, ttlMs: number): string {
  if (why !== 'unresigned') return `stepped down from term ${term} (${why})`;
  return (
    `stepped down from term ${term}, but could not resign its lease (${errorText(error)}): ` +
    `it expires on its own within its TTL (${ttlMs / 1000} s); no other \`baton up\` leads till then`
  );
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
