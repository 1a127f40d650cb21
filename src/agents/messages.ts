/**
 * What Baton tells a model (through an MCP tool result or a Claude Code hook) when it must stop:
 * the task is held by someone else, or its own claim was fenced off. Every message names who
 * holds the task now, when anyone does, and says what to do next. One place, so the MCP server
 * and the hooks say the same thing and a test can check all of them.
 */
import type { Holder } from '../core/claim.js';
import type { SessionId } from '../core/session.js';
import { callersOwn, describeHolder, fencedReason } from '../coordinator/refusals.js';

/** Claiming failed: someone else holds the task. */
export function heldMessage(key: string, holder: Holder): string {
  return (
    `Baton: ${key} is held by ${describeHolder(holder)}, so it is not yours. ` +
    `Stop: do not work on ${key} and change nothing for it. ` +
    `Pick another task, or tell the user that session ${holder.session} on ${holder.host} has it ` +
    `and ask what to do.`
  );
}

/** How a claim came to be no longer current, as far as the caller knows it. */
export type FencedCause = 'moved' | 'released' | 'session_ended';

/**
 * The claim (key, epoch) is not current: the caller was fenced off. The first sentence is the
 * CLI's and the HTTP API's (fencedReason): an epoch never granted, the live claim's epoch of
 * another session, an epoch fenced off, no one holding the task, or the session itself ended.
 * When the live claim is the caller's own (`caller`, its session), it was given a wrong epoch and
 * is told the right one, not to stop.
 */
export function fencedMessage(
  key: string,
  epoch: number,
  current: Holder | null,
  cause?: FencedCause,
  caller?: SessionId | null,
): string {
  const own = cause === 'session_ended' ? null : callersOwn(current, caller, epoch);
  if (own !== null) {
    // Not fenced off: this session holds the task, at another epoch than it gave.
    return (
      `Baton: ${fencedReason(key, epoch, current, false, caller)}. Nothing changed: keep working on ${key}, ` +
      `and give epoch ${own.epoch} from now on.`
    );
  }
  return (
    `Baton: ${fencedReason(key, epoch, current, cause === 'session_ended')}. ` +
    `Stop working on ${key} now: make no more edits, commits, pushes or comments for it. ` +
    `Tell the user that Baton fenced this session off; what you changed so far stays in the working tree. ` +
    `Claim it again only if the user asks you to.`
  );
}

/** A session start that found its task held elsewhere: the hook's words to Claude. */
export function heldAtStartMessage(key: string, holder: Holder): string {
  return `${heldMessage(key, holder)} Edits and shell commands stay blocked in this session while it is held.`;
}
