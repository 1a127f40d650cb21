import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';

/**
 * As a runner does: a job placed on box-1 and started, an agent session under the runner's pid
 * holding the job's task, and the agent's process attached with its own `pid`.
 */
export async function givenSpawnedAgent(store: Store, pid: number) {
  const { session: runner } = await givenHost(store);
  const term = await givenLeader(store);
  const { job } = await store.jobs.enqueue({ key: 'k' });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
  assert.ok(placed.ok);
  const guard = { id: job.id, session: runner.id, epoch: placed.job.epoch };
  await store.jobs.start(guard);
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: runner.pid });
  assert.ok((await store.claims.acquire({ key: 'k', session: agent.id })).ok);
  await store.dispatch.attach({ ...guard, agentSession: agent.id, pid });
  return { runner, agent, guard };
}
