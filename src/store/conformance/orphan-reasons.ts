/**
 * Why the sweep took a running job back (recovery.rescueStale, decision 0060's amendment): a run
 * whose agent released its own claim, or whose agent session ended otherwise, while its runner
 * lives on, says so and names the claim; only a runner
 * that is gone is called no longer live. It used to say `session N (agent M) is no longer live`,
 * naming the live runner, for all of them.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 1, backoffMaxMs: 1 };

interface Run {
  readonly job: number;
  readonly runner: number;
  readonly agent: number;
  /** The agent's claim's epoch: the task's, which need not be the job's. */
  readonly epoch: number;
}

/** A job placed on `host` and begun as a runner begins it: its agent's session holds the claim. */
async function givenRun(store: Store, key: string, host: string): Promise<Run> {
  const { session } = await givenHost(store, host);
  const term = await givenLeader(store, `leader-${host}`);
  const { job } = await store.jobs.enqueue({ key, attemptMax: 3 });
  const placed = await store.dispatch.place({ id: job.id, host, term });
  assert.ok(placed.ok);
  const guard = { id: job.id, session: session.id, epoch: placed.job.epoch };
  const begun = await store.runs.begin({ job: guard, session: { kind: 'agent', host, pid: 7 }, key });
  assert.ok(begun.ok && !(begun.claim instanceof Error) && begun.claim.ok && begun.claim.granted);
  await store.dispatch.attach({ ...guard, agentSession: begun.session.id, pid: 7 });
  return { job: job.id, runner: session.id, agent: begun.session.id, epoch: begun.claim.claim.epoch };
}

async function rescuedReason(store: Store, job: number): Promise<string> {
  const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
  assert.deepEqual(report.jobsRequeued, [job]);
  return (await store.jobs.get(job))?.reason ?? '';
}

export function exerciseOrphanReasons(harness: Harness): void {
  describe('orphaned job reasons', () => {
    test("an agent's release of its own claim is told, with its epoch, not its live runner as gone", () =>
      withFixture(harness, async ({ store }) => {
        // A claim before the run's, so that the run's epoch (2) is not the job's (1).
        const human = await store.sessions.start({ kind: 'human', host: 'desk', pid: 9 });
        await store.tasks.add({ key: 'k', title: 'k', priority: 100 });
        assert.ok((await store.claims.acquire({ key: 'k', session: human.id })).ok);
        await store.claims.release({ key: 'k', session: human.id, epoch: 1, outcome: 'released' });
        const run = await givenRun(store, 'k', 'box-1');
        assert.equal(run.epoch, 2);
        const released = await store.claims.release({
          key: 'k',
          session: run.agent,
          epoch: run.epoch,
          outcome: 'released',
        });
        assert.ok(released.ok);
        await store.sessions.end(run.agent); // as the runner ends a fenced run's agent session
        assert.equal(
          await rescuedReason(store, run.job),
          `requeued: the agent (session ${run.agent}) released its claim of k at epoch 2 (released) ` +
            'before its command exited',
        );
      }));

    test('an agent session ended while it held its claim is told, with how the claim ended', () =>
      withFixture(harness, async ({ store }) => {
        const run = await givenRun(store, 'k', 'box-1');
        await store.sessions.end(run.agent); // which ends its claims abandoned
        assert.equal(
          await rescuedReason(store, run.job),
          `requeued: agent session ${run.agent} is no longer live: its claim of k at epoch 1 ended abandoned`,
        );
      }));

    test('a runner that is gone is named as such, with its agent', () =>
      withFixture(harness, async ({ store }) => {
        const run = await givenRun(store, 'k', 'box-1');
        await store.sessions.end(run.runner);
        assert.equal(
          await rescuedReason(store, run.job),
          `requeued: runner session ${run.runner} (agent ${run.agent}) is no longer live`,
        );
      }));
  });
}
