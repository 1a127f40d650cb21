/**
 * The line that says `baton up`'s loops run, for each membership (a first join and every rejoin):
 * logged once the runner's first heartbeat got through, its first look for placed work returned,
 * the elector's first try at the lease was answered, and the dispatcher ran a pass after that
 * answer. `joined as session N` comes before all of it (the host's containment is still being
 * recorded then, and no loop runs yet): a test or an operator's script that must act on a running
 * `baton up` waits for this line instead (docs/decisions/0042-tests-under-load.md).
 */
import type { SessionId } from '../core/session.js';
import type { Dispatcher } from './dispatcher.js';
import type { LeaderElector } from './leader-elector.js';
import type { Runner } from './runner.js';
import { RUNNING_LINE_START } from './up-defaults.js';

interface UpLoops {
  readonly runner: Runner;
  readonly elector: LeaderElector;
  readonly dispatcher: Dispatcher;
}

/**
 * Starts the elector, the dispatcher and the runner (in that order, as before the line), and logs
 * the running line of `session` once each of their loops has run.
 */
export function startLoops(loops: UpLoops, session: SessionId, log: (line: string) => void): void {
  const { runner, elector, dispatcher } = loops;
  const done = { beat: false, polled: false, lease: false, pass: false };
  const check = (): void => {
    if (!(done.beat && done.polled && done.lease && done.pass)) return;
    const role = elector.leaderTerm() === null ? 'a standby for the lease' : 'the leader';
    log(
      `${RUNNING_LINE_START}${session}: heartbeat, placement poll, lease and dispatch loops each ran (${role})`,
    );
  };
  runner.once('beat', () => ((done.beat = true), check()));
  runner.once('polled', () => ((done.polled = true), check()));
  // A pass begun before the lease's first answer knew no leadership: count the next one.
  const passed = (): void => {
    if (!done.lease) return;
    dispatcher.off('ticked', passed);
    done.pass = true;
    check();
  };
  dispatcher.on('ticked', passed);
  elector.once('reached', () => {
    done.lease = true;
    dispatcher.wake();
    check();
  });
  elector.start();
  dispatcher.start();
  runner.start();
}
