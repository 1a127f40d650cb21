/**
 * `baton session end` on another's session records that an operator ended it, and who: it used to
 * record `stopped`, as if the session had stopped itself. A session ended by itself (its
 * $BATON_SESSION, or the shell that started it) still reads `stopped`. `baton session list`,
 * `baton report sessions`, GET /v1/sessions/{id} and the dashboard's Sessions view say so.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname, userInfo } from 'node:os';
import { bothEngines } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { startTestServer } from '../../test/dashboard/server.js';

type SessionJson = { id: number; state: string; endReason: string | null; endedBy: string | null };

after(stopServers);

/** `baton session end` with $BATON_SESSION set, as an agent's own environment has it. */
async function endAsItself(cli: ReturnType<typeof cliOn>, session: string): Promise<SessionJson> {
  process.env['BATON_SESSION'] = session;
  try {
    return await cli.json<SessionJson>(0, 'session', 'end', session);
  } finally {
    delete process.env['BATON_SESSION'];
  }
}

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: session end by an operator, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test("records an operator and who for another's session, stopped for its own", async () => {
        const url = await db.fresh();
        const cli = cliOn(url, mode);
        const own = await cli.session();
        const agent = String((await cli.json<{ id: number }>(0, 'session', 'start', '--pid', '999991')).id);
        const other = String((await cli.json<{ id: number }>(0, 'session', 'start', '--pid', '999992')).id);
        const ended = await cli.json<SessionJson>(0, 'session', 'end', other);
        const who = mode === 'db' ? `${userInfo().username}@${hostname()}` : (ended.endedBy ?? '');
        if (mode === 'api') assert.match(who, /^token \S+/, 'over HTTP: the token that asked');
        assert.deepEqual([ended.state, ended.endReason, ended.endedBy], ['ended', 'operator', who]);
        const itself = await cli.json<SessionJson>(0, 'session', 'end', own);
        assert.deepEqual([itself.endReason, itself.endedBy], ['stopped', null], 'its own shell ends it');
        const byEnv = await endAsItself(cli, agent);
        assert.deepEqual([byEnv.endReason, byEnv.endedBy], ['stopped', null], 'its $BATON_SESSION ends it');

        const list = await cli.run('session', 'list');
        assert.equal(list.code, 0, list.stderr);
        const state = (id: string) => new RegExp(`^${id} +agent +(.*?) {2}`, 'm').exec(list.stdout)?.[1];
        assert.deepEqual(
          [state(other), state(own), state(agent)],
          [`ended (operator ${who})`, 'ended (stopped)', 'ended (stopped)'],
        );
        const report = await cli.run('report', 'sessions');
        assert.equal(report.code, 0, report.stderr);
        const row = report.stdout.split('\n').find((line) => line.startsWith(`${other} `)) ?? '';
        assert.ok(row.includes(`ended by an operator (${who})`), row);

        const server = await startTestServer(url);
        try {
          const one = (await (await fetch(`${server.url}/v1/sessions/${other}`)).json()) as SessionJson;
          assert.deepEqual([one.endReason, one.endedBy], ['operator', who]);
          const page = await (await fetch(`${server.url}/sessions`)).text();
          assert.ok(page.includes(`<td>ended by an operator (${who})</td>`), 'the Sessions view says so');
        } finally {
          await server.close();
        }
      });
    });
  }
