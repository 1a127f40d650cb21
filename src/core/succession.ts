/**
 * What a new leader says about the one before it, from what the database knows: whether the
 * previous term was resigned (a clean stop resigns it; a takeover resigns it for a dead process)
 * or left to expire, and how the previous holder's session ended. So `baton up`'s line says
 * whether its predecessor died or stepped down.
 */

/** The previous term's holder, as the ledger and its session row tell it. */
export interface Predecessor {
  readonly holder: string;
  /** Its term was resigned (`lease:resigned`), rather than left to expire. */
  readonly resigned: boolean;
  /**
   * Its session: still `live`, `rescued` after missed heartbeats, ended as `stopped` or `died`
   * (taken over once its process was gone), `ended` with no reason recorded; null if unknown.
   */
  readonly session: 'live' | 'rescued' | 'stopped' | 'died' | 'ended' | null;
}

/** The words after `leading the dispatcher, term N`: empty for a first term or an unknown holder. */
export function succession(previous: Predecessor | null): string {
  if (previous === null) return '';
  const who = /^\d+$/.test(previous.holder) ? `session ${previous.holder}` : previous.holder;
  if (previous.session === 'died')
    return `, after ${who}, which died (its process was gone; its host's restart took it over)`;
  if (previous.session === 'rescued')
    return `, after ${who}, which died or hung (rescued after missed heartbeats)`;
  if (!previous.resigned)
    return `, after ${who}, which did not step down: its lease expired unrenewed (died, hung or cut off)`;
  return `, after ${who}, which stepped down`;
}
