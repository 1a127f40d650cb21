/**
 * What `POST /v1/claims/{key}` and `POST /v1/claims/{key}/release` do once their input is
 * checked: the scope check, the call credited to the token, the refusal for held or fenced, the
 * answer. Both ways a request reaches them call these: the Hono routes (routes-core.ts) and the
 * fast path for well-formed requests (fast-claims.ts), so the two cannot drift apart.
 */
import type { ReleaseOutcome } from '../core/claim.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { fencedRefusal, heldRefusal, keptForRunnerLine } from '../coordinator/refusals.js';
import { actingWith, allowAsker, type Asker } from './auth.js';
import type { Token } from '../core/token.js';
import { canonical } from '../core/validate.js';

export async function claimAs(baton: Coordinator, asker: Asker, key: string, session: number) {
  await allowAsker(baton, asker, 'claim', { what: `claim ${key} for session ${session}`, key, session });
  // An agent's token takes only work that is handed out (coordinator/handed-out.ts); an operator's is a person's.
  const claimer = asker.token?.scope === 'agent' ? 'agent' : 'person';
  const outcome = await actingWith(asker.token, () => baton.claim({ key, session }, claimer));
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
  if (outcome === 'done' && isRunsOwnClaim(asker.token, key, session)) {
    const beat = await actingWith(asker.token, () => baton.heartbeat({ session, key, epoch }));
    if (!beat.ok) throw fencedRefusal(key, String(epoch), beat.current, beat.sessionEnded, session);
    return { key, session, epoch, outcome, released: false, message: keptForRunnerLine(key) };
  }
  const released = await actingWith(asker.token, () => baton.release({ key, session, epoch, outcome }));
  if (!released.ok) throw fencedRefusal(key, String(epoch), released.current, released.sessionEnded, session);
  return { key, session, epoch, outcome: outcome ?? 'released' };
}

/**
 * Whether a release names the claim a runner made for the run this token was minted for: its task,
 * by its session (decision 0051, finding 8). The token opened at all only while that claim is live
 * at the run's claim epoch (token-store.ts TokenRun), so the live claim on that task by that session
 * is the run's; an epoch that is not its epoch fails the heartbeat, fenced, as a release would. The
 * runner finishes the job, and so the task, by the agent's exit: released done from inside, the task
 * would be done while its job runs, the job would end cancelled and the agent be killed. So a `done`
 * there only checks the claim; failed and released go through, and other tokens release as always.
 * The key is compared in NFC, as `authorize` and the release read it: its NFD spelling is the same claim.
 */
function isRunsOwnClaim(token: Token | null, key: string, session: number): boolean {
  return (
    token !== null && token.scope === 'agent' && token.task === canonical(key) && token.session === session
  );
}
