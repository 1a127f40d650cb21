/**
 * `/metrics` of a real `baton up` times every store call of the process, each once: the runner's
 * and the dispatcher's as well as the HTTP server's. They share one timed store (meterStore in
 * src/http/server.ts); the runner and dispatcher once called the store unwrapped, so a job's run
 * left no trace in the histogram.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

/** The histogram's count of calls of a store method that ended ok, as /metrics gives it (0 when none). */
function callCount(metrics: string, method: string): number {
  const escaped = method.replace('.', '\\.');
  const line = new RegExp(
    `^baton_store_call_duration_seconds_count\\{method="${escaped}",outcome="ok"\\} (\\d+)$`,
    'm',
  ).exec(metrics);
  return line === null ? 0 : Number(line[1]);
}

for (const db of bothEngines()) {
  describe(`baton up's /metrics (${db.name})`, () => {
    test("counts the runner's and the dispatcher's store calls beside the server's, each once", async () => {
      const c = await clusterFixture(db);
      try {
        assert.equal((await c.baton('enqueue', 'k', '--command', 'true')).code, 0);
        const up = c.up('h1', '--http', '127.0.0.1:0');
        await up.waitForLog(/serving the API and dashboard on http:\/\/127\.0\.0\.1:\d+/);
        const url = /serving the API and dashboard on (http:\/\/127\.0\.0\.1:\d+)/.exec(up.log())?.[1] ?? '';
        await waitUntil(
          async () => (await c.store.jobs.list({ key: 'k' }))[0]?.status === 'done',
          20_000,
          up.log(),
        );
        const scrape = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
        const first = await scrape();
        // The job's placement and its start in one call, by this process's runner for its
        // dispatcher: no placement nor start of their own.
        assert.equal(callCount(first, 'runs.placeAndBegin'), 1, first);
        assert.equal(callCount(first, 'runs.begin'), 0, first);
        assert.equal(callCount(first, 'dispatch.placeMany'), 0, first);
        // The agent's token is minted by that start, in its commit: no call of its own.
        assert.equal(callCount(first, 'tokens.create'), 0, first);
        const minted = (await c.store.audit.list()).filter((entry) => entry.type === 'token:created');
        assert.equal(minted.length, 1, 'the agent got its token');
        assert.ok(callCount(first, 'hosts.heartbeat') >= 1, "the runner's host heartbeats");
        // The server's own read for /metrics, once per scrape.
        const second = await scrape();
        assert.equal(callCount(second, 'observe.stats') - callCount(first, 'observe.stats'), 1);
      } finally {
        await c.close();
      }
    });
  });
}
