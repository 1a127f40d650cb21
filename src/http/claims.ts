/**
 * What `POST /v1/claims/{key}` and `POST /v1/claims/{key}/release` do once their input is
 * checked: the scope check, the call credited to the token, the refusal for held or fenced, the
 * answer. Both ways a request reaches them call these: the Hono routes (routes-core.ts) and the
 * fast path for well-formed requests (fast-claims.ts), so the two cannot drift apart.
 */
import type { ReleaseOutcome } from '../core/claim.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { fencedRefusal, heldRefusal } from '../coordinator/refusals.js';
import { actingWith, allowAsker, type Asker } from './auth.js';

export async function claimAs(baton: Coordinator, asker: Asker, key: string, session: number) {
  await allowAsker(baton, asker, 'claim', { what: `claim ${key} for session ${session}`, key, session });
  const outcome = await actingWith(asker.token, () => baton.claim({ key, session }));
  if (!outcome.ok) throw heldRefusal(key, outcome.holder);
  return { ...outcome.claim, granted: outcome.granted };
}

export interface ReleaseAsked {
  readonly key: string;
  readonly session: number;
  readonly epoch: number;
  readonly outcome?: ReleaseOutcome | undefined;
}

export async function releaseAs(baton: Coordinator, asker: Asker, asked: ReleaseAsked) {
  const { key, session, epoch, outcome } = asked;
  const what = `release ${key} epoch ${epoch} of session ${session}`;
  await allowAsker(baton, asker, 'release', { what, key, session });
  const released = await actingWith(asker.token, () => baton.release({ key, session, epoch, outcome }));
  if (!released.ok) throw fencedRefusal(key, String(epoch), released.current, released.sessionEnded);
  return { key, session, epoch, outcome: outcome ?? 'released' };
}
