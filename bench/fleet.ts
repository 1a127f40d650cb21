/**
 * The fleet measures (issue 22), each on both engines, each engine on a fresh database: the
 * dispatcher tick (dispatch-tick.ts), the heartbeat search (heartbeats.ts) and agent start under
 * a real `baton up` (agent-start.ts).
 */
import { measureAgentStart, type AgentStartResult } from './agent-start.js';
import { measureTicks, type TickResult } from './dispatch-tick.js';
import { measureHeartbeats, type HeartbeatResult } from './heartbeats.js';
import type { PerEngine, Plan } from './report.js';
import { migrateBaton } from './seed.js';
import { progress } from './stats.js';

export interface FleetResults {
  readonly dispatch: PerEngine<TickResult>;
  readonly heartbeats: PerEngine<HeartbeatResult>;
  readonly agentStart: PerEngine<AgentStartResult>;
}

type OnPg = <T>(label: string, work: (url: string) => Promise<T>) => Promise<T>;
type OnFile = <T>(work: (path: string) => Promise<T>) => Promise<T>;

/** Runs `work` on a fresh database of each engine. */
async function both<T>(
  onPg: OnPg,
  onFile: OnFile,
  label: string,
  work: (db: string, engine: string) => Promise<T>,
) {
  const pg = await onPg(label, (url) => work(url, 'pg'));
  const sqlite = await onFile((path) => work(path, 'sqlite'));
  return { pg, sqlite };
}

export async function measureFleet(
  plan: Plan,
  onPg: OnPg,
  onFile: OnFile,
  wanted: (measure: string) => boolean,
  lap: (what: string) => void,
): Promise<FleetResults> {
  const none = { pg: null, sqlite: null };
  let dispatch: PerEngine<TickResult> = none;
  let heartbeats: PerEngine<HeartbeatResult> = none;
  let agentStart: PerEngine<AgentStartResult> = none;
  if (wanted('dispatch')) {
    dispatch = await both(onPg, onFile, 'dispatch', (db, engine) => measureTicks(db, plan.fleet, engine));
    lap('dispatcher ticks');
  }
  if (wanted('heartbeat')) {
    heartbeats = await both(onPg, onFile, 'heartbeat', async (db, engine) => {
      await migrateBaton(db);
      return measureHeartbeats(db, plan.heartbeats, engine);
    });
    progress(`heartbeats: PG ${heartbeats.pg?.sessions} sessions, SQLite ${heartbeats.sqlite?.sessions}`);
    lap('heartbeats');
  }
  if (wanted('agent')) {
    agentStart = await both(onPg, onFile, 'agent', (db) => measureAgentStart(db, plan.agentStartSamples));
    progress(
      `agent start p50: PG ${agentStart.pg?.p50.toFixed(1)} ms, SQLite ${agentStart.sqlite?.p50.toFixed(1)} ms`,
    );
    lap('agent start');
  }
  return { dispatch, heartbeats, agentStart };
}
