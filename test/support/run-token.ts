/**
 * A run as `baton up`'s runner makes one, for tests of what an agent holds: a runner session's job on
 * a task, the agent session's claim on it, and that run's token (TokenRun: job attempt and claim
 * epoch); and the environment an agent wrote out (`env > env.txt`) read back.
 */
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/store.js';

export async function mintRunToken(store: Store, key = 'k') {
  const runner = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 2 });
  await store.jobs.enqueue({ key });
  const job = await store.jobs.claimNext({ session: runner.id, start: true });
  assert.ok(job !== null);
  const claimed = await store.claims.acquire({ key, session: agent.id });
  assert.ok(claimed.ok);
  const run = { jobId: job.id, jobEpoch: job.epoch, claimEpoch: claimed.claim.epoch };
  const made = await store.tokens.create({ scope: 'agent', session: agent.id, run });
  return { runner, agent, job, claim: claimed.claim, made };
}

/** `NAME=value` lines (an agent's `env` output) as an object; a value keeps any `=` it holds. */
export function envOf(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}
