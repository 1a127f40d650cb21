/**
 * The AgentClient over the local Coordinator: the database named by --db or BATON_DB (else the
 * default file under the working directory), opened once for the life of the client.
 * openAgentClient() chooses by the CLI's rule (--db, else BATON_URL, else BATON_DB): with BATON_URL
 * and no --db, the HTTP client (http-client.ts), even when BATON_DB is set too. An agent the runner
 * started holds BATON_URL and a token bound to its run; the MCP config it was given may still name
 * BATON_DB (`baton mcp --print-config` writes it), and that must not take it past its token.
 */
import { hostname } from 'node:os';
import { Coordinator } from '../coordinator/coordinator.js';
import { InvalidInputError } from '../core/errors.js';
import { absoluteDbUrl, openStore } from '../store/open.js';
import { projectDb } from '../store/project.js';
import type { Store } from '../store/store.js';
import type { AgentClient } from './client.js';
import { HttpAgentClient } from './http-client.js';

export class LocalAgentClient implements AgentClient {
  private readonly baton: Coordinator;

  constructor(
    private readonly store: Store,
    readonly target: string,
  ) {
    this.baton = new Coordinator(store);
  }

  startSession: AgentClient['startSession'] = (params) => this.baton.startSession(params);

  endSession: AgentClient['endSession'] = async (session) => (await this.baton.endSession(session)).ended;

  getSession: AgentClient['getSession'] = (session) => this.baton.getSession(session);

  sessionClaims: AgentClient['sessionClaims'] = async (session) => {
    return { claims: await this.baton.sessionClaims(session), tokenSession: null };
  };

  heartbeat: AgentClient['heartbeat'] = (params) =>
    this.baton.heartbeat({ session: params.session, key: params.claim?.key, epoch: params.claim?.epoch });

  claim: AgentClient['claim'] = (params) => this.baton.claim(params);

  release: AgentClient['release'] = (params) => this.baton.release(params);

  recordEffect: AgentClient['recordEffect'] = (params) => this.baton.effects.record(params);

  markToolCalls: AgentClient['markToolCalls'] = async (params) =>
    (await this.baton.progress.mark({ session: params.session, toolCalls: params.count, note: params.note }))
      .ok;

  showTask: AgentClient['showTask'] = async (key) => {
    const { task, holder, jobs } = await this.baton.showTask(key);
    return { task, holder, jobs };
  };

  next: AgentClient['next'] = async (params) => {
    const outcome = await this.baton.lifecycle.next({ ...params, host: hostname(), pid: process.pid });
    return outcome.ok
      ? { ok: true, task: outcome.task, epoch: outcome.claim.epoch }
      : { ok: false, gated: outcome.gated };
  };

  escalate: AgentClient['escalate'] = async (params) => {
    const by = { name: `session ${params.session}`, session: params.session };
    const result = await this.baton.lifecycle.escalate({ ...params, by });
    return result.ok ? { ok: true, task: result.task, jobId: result.jobId } : result;
  };

  close(): Promise<void> {
    return this.store.close();
  }
}

export interface AgentClientSource {
  /** --db, when given: it wins over the environment. */
  readonly db?: string | undefined;
  /** A database to use when neither --db nor BATON_DB names one (the hooks bake one in). */
  readonly defaultDb?: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

/**
 * The client for this process: the database named by --db; else, with BATON_URL (and
 * BATON_TOKEN), the HTTP API; else the database BATON_DB names; else the default database.
 */
export async function openAgentClient(source: AgentClientSource): Promise<AgentClient> {
  const fromEnv = source.env['BATON_DB'];
  const url = source.env['BATON_URL'];
  if (source.db === undefined && url) {
    const token = source.env['BATON_TOKEN'];
    if (!token) {
      throw new InvalidInputError(
        `BATON_URL is set (${url}), but BATON_TOKEN is not`,
        'set BATON_TOKEN to a token from `baton token create` (a runner gives its agents one)',
      );
    }
    return new HttpAgentClient(url, token);
  }
  const named = source.db ?? (fromEnv ? fromEnv : undefined);
  const db = absoluteDbUrl(named ?? source.defaultDb ?? projectDb(source.cwd), source.cwd);
  return new LocalAgentClient(await openStore(db, { intent: 'use' }), db);
}
