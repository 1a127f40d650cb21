/**
 * The Baton session an MCP server acts under, and the claims it made. With BATON_SESSION the
 * session is given (a runner or a person started it, and ends it); otherwise the server starts
 * one on first use and ends it when its client goes away (stdin closes), which releases whatever
 * it still holds. While the server runs it heartbeats the session: the process is alive. That is
 * liveness only; progress comes from the tools that change something.
 */
import { FencedError } from '../../core/errors.js';
import type { SessionId } from '../../core/session.js';
import type { AgentClient, ClaimRef } from '../client.js';

export interface McpSessionOptions {
  readonly client: AgentClient;
  /** BATON_SESSION, if set. */
  readonly given: SessionId | null;
  /** BATON_KEY and BATON_EPOCH, if set: the claim a runner made for this agent. */
  readonly givenClaim: ClaimRef | null;
  readonly name: string;
  readonly host: string;
  readonly pid: number;
}

export class McpSession {
  private id: SessionId | null;
  private starting: Promise<SessionId> | null = null;
  /** Claims made through this server (or given), by key. */
  readonly claims = new Map<string, number>();

  constructor(private readonly options: McpSessionOptions) {
    this.id = options.given;
    if (options.givenClaim !== null) this.claims.set(options.givenClaim.key, options.givenClaim.epoch);
  }

  /**
   * Whether `claim` is the one a runner made for this run (BATON_SESSION, BATON_KEY, BATON_EPOCH):
   * the runner releases it when the agent exits, by how the agent exited.
   */
  isRunnersClaim(claim: ClaimRef): boolean {
    const given = this.options.givenClaim;
    return given !== null && given.key === claim.key && given.epoch === claim.epoch;
  }

  /** Whether this server started the session (and so ends it). */
  get owned(): boolean {
    return this.options.given === null;
  }

  /** The session id, or null before the first tool that needed one. */
  get current(): SessionId | null {
    return this.id;
  }

  /** The session, started on first use. */
  async use(): Promise<SessionId> {
    if (this.id !== null) return this.id;
    this.starting ??= this.options.client
      .startSession({
        kind: 'agent',
        name: this.options.name,
        host: this.options.host,
        pid: this.options.pid,
      })
      .then((started) => (this.id = started.id));
    try {
      return await this.starting;
    } finally {
      this.starting = null;
    }
  }

  /**
   * Runs `work` under the session. An owned session that was ended or declared stale meanwhile
   * (the machine slept past its heartbeats) is replaced once by a new one: its claims are gone
   * anyway, and the tools report them fenced. A given session is never replaced.
   */
  async run<T>(work: (session: SessionId) => Promise<T>): Promise<T> {
    const session = await this.use();
    try {
      return await work(session);
    } catch (error) {
      if (!(error instanceof FencedError) || !this.owned) throw error;
      this.id = null;
      return work(await this.use());
    }
  }

  /** The liveness heartbeat; never throws (the trust is judged by the claims' own heartbeats). */
  async beat(): Promise<void> {
    if (this.id === null) return;
    await this.options.client.heartbeat({ session: this.id }).catch(() => undefined);
  }

  /** Ends an owned session (releasing what it holds); a given one is left to its owner. */
  async end(): Promise<void> {
    if (this.id === null || !this.owned) return;
    await this.options.client.endSession(this.id);
  }
}
