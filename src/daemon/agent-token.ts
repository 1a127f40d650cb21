/**
 * How an agent reaches Baton when `baton up` serves the HTTP API: through it alone, with a token
 * of scope `agent` bound to the agent's own session, made when its run starts and revoked when
 * the run ends, however it ends (agent-run.ts's finally). Without an API, the agent gets
 * BATON_DB as before and there is no token.
 */
import type { SessionId } from '../core/session.js';
import type { Store } from '../store/store.js';

export class AgentReach {
  private constructor(
    private readonly store: Store,
    /** What the agent is given: BATON_URL and BATON_TOKEN. */
    readonly api: { readonly url: string; readonly token: string },
    private readonly tokenId: string,
  ) {}

  /** The reach of one run: a fresh agent token when `apiUrl` is set, else null. */
  static async open(
    o: { readonly store: Store; readonly apiUrl?: string | null | undefined },
    session: SessionId,
    jobId: number,
  ): Promise<AgentReach | null> {
    if (o.apiUrl == null) return null;
    const made = await o.store.tokens.create({ scope: 'agent', session, name: `job ${jobId}` });
    return new AgentReach(o.store, { url: o.apiUrl, token: made.secret }, made.token.id);
  }

  /** Revokes the run's token; from now on the API answers it 401. */
  async close(): Promise<void> {
    await this.store.tokens.revoke(this.tokenId);
  }
}
