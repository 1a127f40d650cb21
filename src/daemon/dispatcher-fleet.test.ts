/**
 * When a dispatcher pass reads the fleet (dispatcher.ts `place`): a pass a wake-up asked for sends
 * the fleet's read beside its candidates' where the store runs reads side by side (PostgreSQL),
 * so a start waits for one round trip, not two; any other pass, and every pass on SQLite, reads
 * it only after candidates were found, so an idle poll reads nothing more. Real stores on both
 * engines; the store is wrapped only to see the order of the calls.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_RETRY_POLICY } from '../core/retry.js';
import type { Job } from '../core/job.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines } from '../../test/support/databases.js';
import { servedBox1 } from '../../test/support/placed-job.js';
import { systemClock } from './clock.js';
import { Dispatcher } from './dispatcher.js';

/** The store, with `seen` told when the fleet is asked for and when the candidates answer. */
function tracked(store: Store, seen: string[], fleetFails = false): Store {
  return {
    ...store,
    dispatch: {
      ...store.dispatch,
      candidates: async (params) => {
        const answer = await store.dispatch.candidates(params);
        seen.push('candidates answered');
        return answer;
      },
    },
    hosts: {
      ...store.hosts,
      fleet: () => {
        seen.push('fleet asked');
        return fleetFails ? Promise.reject(new Error('the fleet read failed')) : store.hosts.fleet();
      },
    },
  };
}

/** A leader's dispatcher on `store` (its lease taken), with host box-1 served and room on it. */
async function leading(store: Store, reads: Store): Promise<{ dispatcher: Dispatcher; placed: Job[] }> {
  const { term: ref } = await servedBox1(store, 'me');
  const term = ref.term;
  const dispatcher = new Dispatcher({
    store: reads,
    elector: { name: 'dispatcher', leaderTerm: () => term },
    holder: 'me',
    clock: systemClock,
    intervalMs: 60_000,
    staleAfterMs: 30_000,
    recoveryIntervalMs: 60_000,
    policy: DEFAULT_RETRY_POLICY,
  });
  const placed: Job[] = [];
  dispatcher.on('placed', (job) => placed.push(job));
  dispatcher.on('failed', (error) => assert.fail(`the pass failed: ${String(error)}`));
  return { dispatcher, placed };
}

for (const db of bothEngines()) {
  describe(`${db.name}: a dispatcher pass's fleet read`, () => {
    test('a woken pass sends it beside the candidates where reads run side by side, and places', async () => {
      const store = await openStore(await db.fresh());
      try {
        const seen: string[] = [];
        const { dispatcher, placed } = await leading(store, tracked(store, seen));
        const { job } = await store.jobs.enqueue({ key: 'k' });
        dispatcher.wake();
        await dispatcher.tick();
        const side = store.capabilities.concurrentReads;
        assert.deepEqual(
          seen,
          side ? ['fleet asked', 'candidates answered'] : ['candidates answered', 'fleet asked'],
          side ? 'the fleet is asked for before the candidates answer' : 'one after the other on SQLite',
        );
        assert.deepEqual(
          placed.map((each) => [each.id, each.host, each.status]),
          [[job.id, 'box-1', 'claimed']],
        );
      } finally {
        await store.close();
      }
    });

    test('a pass no wake-up asked for reads it only after candidates were found', async () => {
      const store = await openStore(await db.fresh());
      try {
        const seen: string[] = [];
        const { dispatcher, placed } = await leading(store, tracked(store, seen));
        await dispatcher.tick();
        assert.deepEqual(seen, ['candidates answered'], 'nothing queued: no fleet read');
        await store.jobs.enqueue({ key: 'k' });
        seen.length = 0;
        await dispatcher.tick();
        assert.deepEqual(seen, ['candidates answered', 'fleet asked']);
        assert.equal(placed.length, 1);
      } finally {
        await store.close();
      }
    });

    test('a woken pass that finds nothing queued drops the fleet read, and its failure', async () => {
      const store = await openStore(await db.fresh());
      try {
        const seen: string[] = [];
        const { dispatcher, placed } = await leading(store, tracked(store, seen, true));
        dispatcher.wake();
        await dispatcher.tick(); // a failure reaching the pass would fail the test ('failed' above)
        const expected = store.capabilities.concurrentReads
          ? ['fleet asked', 'candidates answered']
          : ['candidates answered'];
        assert.deepEqual(seen, expected);
        assert.deepEqual(placed, []);
        seen.length = 0;
        await dispatcher.tick();
        assert.deepEqual(seen, ['candidates answered'], 'the wake-up served one pass');
      } finally {
        await store.close();
      }
    });
  });
}
