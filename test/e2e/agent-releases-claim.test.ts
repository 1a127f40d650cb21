/**
 * A run whose agent releases its own claim and goes on (decision 0060's amendment), under a real
 * `baton up`: the runner's next claim heartbeat is refused, it kills the agent and ends its
 * session, and the sweep takes the job back. The reason used to read `session N (agent M) is no
 * longer live`, naming the runner that was still live and leading; it now says what happened.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, clusterFixture } from './cluster-support.js';

const AGENT = 'baton release "$BATON_KEY" --session "$BATON_SESSION" --epoch "$BATON_EPOCH"; exec sleep 60';

for (const db of bothEngines()) {
  describe(`an agent releases its own claim (${db.name})`, () => {
    test('the run ends saying the agent released its claim, not that its live runner is gone', async () => {
      const c = await clusterFixture(db);
      try {
        const { job } = await c.store.jobs.enqueue({ key: 'k', attemptMax: 1, command: AGENT });
        const http = db.name.startsWith('postgres') ? ['--http', '127.0.0.1:0'] : [];
        const up = c.up('h1', ...STEADY, ...http);
        await waitUntil(
          async () => (await c.store.jobs.get(job.id))?.status === 'failed',
          30_000,
          `the job to fail:\n${up.log()}`,
        );
        const [runner] = (await c.store.sessions.list()).filter((session) => session.kind === 'daemon');
        const [agent] = (await c.store.sessions.list()).filter((session) => session.kind === 'agent');
        assert.equal(runner?.state, 'live', 'the runner lives on');
        const why = `the agent (session ${agent?.id}) released its claim of k at epoch 1 (released) before its command exited`;
        assert.equal((await c.store.jobs.get(job.id))?.reason, `attempts exhausted: ${why}`);
        const shown = await c.baton('job', 'show', String(job.id));
        assert.equal(shown.code, 0, shown.stderr);
        assert.ok(shown.stdout.includes(`failed — ${why}`), shown.stdout);
        assert.doesNotMatch(shown.stdout, /no longer live/);
      } finally {
        await c.close();
      }
    });
  });
}
