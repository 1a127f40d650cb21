/**
 * An agent session's pid in `baton session list` and the dashboard's Claims view is the agent's
 * own once its runner spawned it, with the `baton up` that ran it, as `baton report sessions` has
 * it (`5112 (agent; baton up 5068)`): both showed the `baton up`'s pid alone.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { startTestServer } from '../../test/dashboard/server.js';
import { openStore } from '../store/open.js';
import { givenSpawnedAgent } from '../store/conformance/spawned-agent.js';

after(stopServers);

/** As a runner does: a placed job, an agent session under the runner's pid, its claim and process. */
async function spawnedAgent(url: string): Promise<{ runnerPid: number; agent: number }> {
  const store = await openStore(url);
  try {
    const { runner, agent } = await givenSpawnedAgent(store, 5112);
    return { runnerPid: runner.pid, agent: agent.id };
  } finally {
    await store.close();
  }
}

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: an agent's pid, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('session list and the Claims view show the agent pid with its baton up, as the report does', async () => {
        const url = await db.fresh();
        const { runnerPid, agent } = await spawnedAgent(url);
        const cli = cliOn(url, mode);
        const shown = `5112 (agent; baton up ${runnerPid})`;
        const list = await cli.run('session', 'list');
        assert.equal(list.code, 0, list.stderr);
        const row = list.stdout.split('\n').find((line) => line.startsWith(`${agent} `)) ?? '';
        assert.ok(row.includes(`box-1  ${shown}  `), row);
        const listed = await cli.json<{ id: number; agentPid: number | null }[]>(0, 'session', 'list');
        assert.equal(listed.find((session) => session.id === agent)?.agentPid, 5112);
        const report = await cli.run('report', 'sessions');
        assert.ok(report.stdout.includes(shown), report.stdout);

        const server = await startTestServer(url);
        try {
          const page = await (await fetch(`${server.url}/claims`)).text();
          assert.match(page, new RegExp(`agent on box-1, pid\\s+${shown.replace(/[()]/g, '\\$&')}`));
        } finally {
          await server.close();
        }
      });
    });
  }
