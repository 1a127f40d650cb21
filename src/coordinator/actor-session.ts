/**
 * The session a person or process names as the one it acts under (`--session` on gate, close,
 * reopen, approve, cancel, retry and `host disable`), checked before the change: the ledger
 * attributes rows to it, so a session that does not exist is refused (NotFoundError, exit 4) and
 * so is one that ended (FencedError, as `next` and a claim under it are), and nothing is written.
 * Checked by a read ahead of the write, not in its statement: a session that ends in between
 * only leaves a row naming a session that was live when the change was asked for.
 */
import { FencedError, NotFoundError } from '../core/errors.js';
import type { Actor } from '../core/task.js';
import type { Store } from '../store/store.js';

/** `by` as given, once the session it names (if any) exists and is live. */
export async function checkedActor(store: Pick<Store, 'sessions'>, by: Actor): Promise<Actor> {
  if (by.session === undefined) return by;
  const session = await store.sessions.get(by.session);
  if (session === null) {
    throw new NotFoundError('session', String(by.session), 'start one with `baton session start`');
  }
  if (session.state !== 'live') {
    throw new FencedError(
      `session ${by.session} is ${session.state}: it cannot act any more`,
      'start a new session with `baton session start`, or leave --session out',
    );
  }
  return by;
}
