/**
 * How sessions and runs end, as `baton report sessions` tells it after a crash. It used to say
 * `ended` for a `baton up` that was SIGKILLed and taken over exactly as for one stopped with
 * Ctrl-C, `failed` for a run whose agent was SIGKILLed and requeued (while `baton job show` said
 * `requeued — agent killed by SIGKILL`), and the `baton up`'s pid for its agents' sessions.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SessionReport } from '../../src/core/session-report.js';
import { treeMembers } from '../../src/os/process-tree.js';
import { startTestServer } from '../dashboard/server.js';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import {
  agentPids,
  agentStarted,
  clusterFixture,
  isAlive,
  STEADY,
  type ClusterFixture,
} from './cluster-support.js';

/** The job's attempt once its agent runs, with the agent's pid as its run records it. */
async function runningAttempt(c: ClusterFixture, id: number, attempt: number): Promise<number> {
  await waitUntil(
    async () => (await c.store.jobs.get(id))?.attempt === attempt && (await agentStarted(c.store, 'k')),
    20_000,
    `attempt ${attempt}'s agent to start`,
  );
  return (await c.store.jobs.get(id))?.pid ?? 0;
}

for (const db of bothEngines()) {
  describe(`${db.name}: baton report sessions after crashes`, () => {
    test('tells a SIGKILLed, taken-over baton up from a stopped one, a requeued run from a failed one', async () => {
      const c = await clusterFixture(db);
      try {
        const { job } = await c.store.jobs.enqueue({
          key: 'k',
          attemptMax: 3,
          command: 'test "$BATON_ATTEMPT" -gt 2 || exec sleep 60',
        });
        const first = c.up('solo');
        const killed = await runningAttempt(c, job.id, 1);
        for (const agent of agentPids(killed)) process.kill(agent, 'SIGKILL');
        const second = await runningAttempt(c, job.id, 2);
        const tree = treeMembers(second);
        first.signal('SIGKILL');
        await first.exited();
        await waitUntil(() => tree.every((pid) => !isAlive(pid)), 5_000, 'the agent tree to die with it');
        const next = c.up('solo');
        await next.waitForLog(
          /took over host solo from session \d+ \(pid \d+ is no longer running here\): it died, silent for [\d.]+ s/,
        );
        const [dead] = (await c.store.sessions.list()).filter((session) => session.kind === 'daemon');
        await next.waitForLog(
          new RegExp(
            `leading the dispatcher, term 2, after session ${dead?.id}, which died \\(its process was gone`,
          ),
        );
        await waitUntil(
          async () => (await c.store.jobs.get(job.id))?.status === 'done',
          30_000,
          `the job to finish after the restart:\n${next.log()}`,
        );
        next.signal('SIGINT');
        await next.exited();

        const shown = await c.baton('report', 'sessions', '--json');
        assert.equal(shown.code, 0, shown.stderr);
        const reports = JSON.parse(shown.stdout) as SessionReport[];
        const daemons = reports.filter((report) => report.kind === 'daemon');
        assert.deepEqual(
          daemons.map((report) => [report.pid, report.end, report.endReason]),
          [
            [first.pid, 'ended', 'died'],
            [next.pid, 'ended', 'stopped'],
          ],
        );
        const agents = reports.filter((report) => report.kind === 'agent');
        assert.deepEqual(
          agents.map((report) => [report.pid, report.agentPid, report.endReason]),
          [
            [first.pid, killed, 'stopped'],
            [first.pid, second, 'died'],
            [next.pid, agents[2]?.agentPid, 'stopped'],
          ],
        );
        const runs = agents.map((report) => report.issuesWorked.map((issue) => issue.run));
        assert.deepEqual(
          runs.map((issues) => issues.map((run) => run?.outcome)),
          [['requeued'], ['requeued'], ['done']],
        );
        assert.equal(runs[0]?.[0]?.reason, 'agent killed by SIGKILL');
        assert.match(runs[1]?.[0]?.reason ?? '', /^runner session \d+ \(agent \d+\) is no longer live$/);

        const table = await c.baton('report', 'sessions');
        assert.equal(table.code, 0, table.stderr);
        const row = (session: number): string =>
          table.stdout.split('\n').find((line) => line.startsWith(`${session} `)) ?? '';
        assert.match(row(daemons[0]?.session ?? 0), /died \(process gone, host taken over\)/);
        assert.match(row(daemons[1]?.session ?? 0), / stopped /);
        assert.match(
          row(agents[0]?.session ?? 0),
          new RegExp(`${killed} \\(agent; baton up ${first.pid}\\)`),
        );
        assert.match(row(agents[0]?.session ?? 0), /k@\d+:requeued — agent killed by SIGKILL/);

        const list = await c.baton('session', 'list');
        assert.match(list.stdout, new RegExp(`^${daemons[0]?.session} +daemon +ended \\(died\\) `, 'm'));
        assert.match(list.stdout, new RegExp(`^${daemons[1]?.session} +daemon +ended \\(stopped\\) `, 'm'));

        // The HTTP API's report and the dashboard's Sessions view say the same.
        const server = await startTestServer(c.url);
        try {
          const api = (await (await fetch(`${server.url}/v1/report/sessions`)).json()) as SessionReport[];
          assert.deepEqual(api, reports);
          const one = await fetch(`${server.url}/v1/sessions/${daemons[0]?.session}`);
          assert.equal(one.status, 200);
          const session = (await one.json()) as { state: string; endReason: string | null };
          assert.deepEqual([session.state, session.endReason], ['ended', 'died']);
          const page = await (await fetch(`${server.url}/sessions`)).text();
          assert.match(page, /<td>died \(process gone, host taken over\)<\/td>/);
          assert.match(page, /<td>stopped<\/td>/);
          assert.match(page, new RegExp(`<td>${killed} \\(agent; baton up ${first.pid}\\)</td>`));
          assert.match(page, /epoch \d+:\s*requeued — agent killed by SIGKILL/);
        } finally {
          await server.close();
        }
      } finally {
        await c.close();
      }
    });

    test("a new leader's line says whether the one before it died or stepped down", async () => {
      const c = await clusterFixture(db);
      try {
        // About the lease's ledger, not fencing: STEADY, so a loaded machine does not fence a
        // process (a new session, and the terms shifted) before the kill (docs/decisions/0042).
        const first = c.up('a', ...STEADY);
        await first.waitRunning();
        await first.waitForLog(/leading the dispatcher, term 1$/m);
        const a = Number(/joined as session (\d+)/.exec(first.log())?.[1]);
        const standby = c.up('b', ...STEADY);
        await standby.waitRunning();
        first.signal('SIGKILL');
        // Its lease expired unrenewed; the new leader may have rescued its session before it looks.
        await standby.waitForLog(
          new RegExp(`term 2, after session ${a}, which (did not step down: its lease expired|died or hung)`),
        );
        const b = Number(/joined as session (\d+)/.exec(standby.log())?.[1]);
        const third = c.up('c', ...STEADY);
        await third.waitRunning();
        standby.signal('SIGINT');
        await third.waitForLog(
          new RegExp(`leading the dispatcher, term 3, after session ${b}, which stepped down$`, 'm'),
        );
      } finally {
        await c.close();
      }
    });
  });
}
