/**
 * How an agent reaches Baton when `baton up` serves the HTTP API: through it alone, with a token of
 * scope `agent` bound to the agent's own session and to its run (the job attempt and the claim
 * epoch), made when its run starts (in the commit that grants its claim: store.runs.begin) and
 * revoked when the run ends, however it ends (agent-run.ts's finally). A runner killed by SIGKILL
 * revokes nothing: the token still dies with the run, since the store opens it only while that job
 * attempt, its claim and its session are live (token-store.ts TokenRun). Without an API, the agent
 * gets BATON_DB as before and no token.
 */
import type { SessionId } from '../core/session.js';
import type { Store } from '../store/store.js';
import type { TokenCreated, TokenRun } from '../store/token-store.js';
import { verifiedTokens } from '../coordinator/token-cache.js';

export class AgentReach {
  private constructor(
    private readonly store: Store,
    /** What the agent is given: BATON_URL and BATON_TOKEN. */
    readonly api: { readonly url: string; readonly token: string },
    private readonly tokenId: string,
  ) {}

  /** The reach of a token minted with the run's beginning (store.runs.begin), when `apiUrl` is set. */
  static of(
    options: { readonly store: Store; readonly apiUrl?: string | null | undefined },
    made: TokenCreated | null,
  ): AgentReach | null {
    if (options.apiUrl == null || made === null) return null;
    return new AgentReach(options.store, { url: options.apiUrl, token: made.secret }, made.token.id);
  }

  /** The reach of one run (the job attempt and its claim): a fresh agent token when `apiUrl` is set, else null. */
  static async open(
    options: { readonly store: Store; readonly apiUrl?: string | null | undefined },
    session: SessionId,
    job: { readonly id: number; readonly epoch: number },
    claimEpoch: number,
  ): Promise<AgentReach | null> {
    if (options.apiUrl == null) return null;
    const run: TokenRun = { jobId: job.id, jobEpoch: job.epoch, claimEpoch };
    const made = await options.store.tokens.create({
      scope: 'agent',
      session,
      run,
      name: `job ${run.jobId}`,
    });
    return new AgentReach(options.store, { url: options.apiUrl, token: made.secret }, made.token.id);
  }

  /** Revokes the run's token; from now on the API answers it 401. */
  async close(): Promise<void> {
    await this.store.tokens.revoke({ id: this.tokenId });
    // The API this process serves forgets it at once (coordinator/token-cache.ts).
    verifiedTokens.forget(this.tokenId);
  }
}
