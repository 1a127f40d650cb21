/**
 * An agent's `baton` is the runner's own (src/daemon/agent-env.ts withBatonOnPath): `baton up` puts
 * Baton's bin/ first on each agent's PATH, so the README's agent-side commands (`baton escalate`,
 * `baton effect`, `baton task show`) work in a run wherever and however Baton was installed, here
 * from a checkout that is on no PATH: on SQLite through BATON_DB, on PostgreSQL through the API.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, STEADY, clusterFixture } from './cluster-support.js';

const AGENT = 'command -v baton > which.txt; baton task show "$BATON_KEY" --json > shown.json 2> shown.err';

for (const db of bothEngines()) {
  describe(`an agent calls baton by name (${db.name})`, () => {
    test("the runner's baton is first on the agent's PATH and answers for its task", async () => {
      const c = await clusterFixture(db);
      try {
        assert.equal((await c.baton('task', 'add', 'k', '--title', 'shown')).code, 0);
        assert.equal((await c.baton('enqueue', 'k', '--command', AGENT)).code, 0);
        const http = db.name.startsWith('postgres') ? ['--http', '127.0.0.1:0'] : [];
        const up = c.up('h1', ...STEADY, ...http);
        await waitUntil(
          async () => (await c.store.jobs.list({ key: 'k' }))[0]?.status === 'done',
          30_000,
          up.log(),
        );
        assert.equal(readFileSync(join(c.dir, 'which.txt'), 'utf8').trim(), join(ROOT, 'bin', 'baton'));
        const err = existsSync(join(c.dir, 'shown.err'))
          ? readFileSync(join(c.dir, 'shown.err'), 'utf8')
          : '';
        const text = readFileSync(join(c.dir, 'shown.json'), 'utf8');
        const shown = (text === '' ? null : JSON.parse(text)) as {
          key?: string;
          task?: { title?: string };
        } | null;
        assert.equal(shown?.key, 'k', err);
        assert.equal(shown?.task?.title, 'shown');
      } finally {
        await c.close();
      }
    });
  });
}
