/** How `baton up` is asked to stop (decisions 0034 and 0057): its signals and a closed stdout. */
import { STOP_OUTPUT_CLOSED } from '../../daemon/drain.js';
import { stopOnClosedOutput } from '../stdio.js';

/**
 * The first SIGTERM or SIGINT aborts `stop` (a drain), the second `now` (at once), until released:
 * from the start of the command, so a signal before the store opened stops it too (no join).
 * A closed stdout (its reader went away) aborts `stop` too, as a first signal, once `watchOutput`
 * is called: the agents running may finish within --drain, the session ends, and the call exits 8
 * (stdio.ts); the host is not left marked as a planned stop (drain.ts STOP_OUTPUT_CLOSED).
 */
export function stopSignals(): {
  stop: AbortController;
  now: AbortController;
  watchOutput: (drainMs: number) => void;
  release: () => void;
} {
  const stop = new AbortController();
  const now = new AbortController();
  const leave = (): void => (stop.signal.aborted ? now.abort() : stop.abort());
  process.on('SIGINT', leave);
  process.on('SIGTERM', leave);
  let unwatch = (): void => undefined;
  const watchOutput = (drainMs: number): void => {
    const stopping =
      `leaving the cluster as on SIGTERM (running agents get --drain ${drainMs / 1000} s to finish, ` +
      'then are killed and their jobs requeued; its session ends, its host left enabled: no planned stop)';
    unwatch = stopOnClosedOutput('baton up', stopping, () => stop.abort(STOP_OUTPUT_CLOSED));
  };
  const release = (): void => {
    process.removeListener('SIGINT', leave);
    process.removeListener('SIGTERM', leave);
    unwatch();
  };
  return { stop, now, watchOutput, release };
}
