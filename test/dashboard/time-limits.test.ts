/**
 * The dashboard shows run time limits (docs/decisions/0037-run-time-limit.md) where the CLI does:
 * the Hosts view a runner's default (`baton up --time-limit`, published with its host row), the
 * Queue view each job's own (`queue list`'s TIME_LIMIT); and the Hosts view whether a runner runs
 * jobs without a command (`baton hosts`' AGENT_CMD, decision 0047). A real server on a real store, both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { startTestServer } from './server.js';

/** The cells of a page's table: its column headers, and each row's cells keyed by its first one. */
function cellsOf(page: string): { columns: string[]; rows: Map<string, string[]> } {
  const text = (cell: string): string =>
    cell
      .replace(/<[^>]*>/g, '')
      .replace(/\s+/g, ' ')
      .trim();
  const columns = [...page.matchAll(/<th scope="col">([^<]*)<\/th>/g)].map((match) => match[1] ?? '');
  const body = page.slice(page.indexOf('<tbody'));
  const rows = new Map<string, string[]>();
  for (const [row] of body.matchAll(/<tr>[\s\S]*?<\/tr>/g)) {
    const cells = [...row.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((match) => text(match[1] ?? ''));
    rows.set(cells[0] ?? '', cells);
  }
  return { columns, rows };
}

/** The cell of `row` under `column`. */
function cell(page: string, row: string, column: string): string | undefined {
  const { columns, rows } = cellsOf(page);
  const at = columns.indexOf(column);
  assert.ok(at >= 0, `no column ${column} in ${columns.join(', ')}`);
  return rows.get(row)?.[at];
}

for (const db of bothEngines()) {
  describe(`the dashboard's time limits (${db.name})`, () => {
    test("Hosts shows each runner's default time limit, Queue each job's own", async () => {
      const server = await startTestServer(await db.fresh());
      try {
        const { store } = server;
        for (const [name, timeLimitMs] of [
          ['limited', 5_400_000],
          ['plain', null],
        ] as const) {
          const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
          const capacity = { ramTotalMb: 8000, ramReservedMb: 0, ramFreeMb: 8000, slotsMax: 2 };
          await store.hosts.register({ name, session: session.id, timeLimitMs, ...capacity });
        }
        const own = await store.jobs.enqueue({ key: 'own', timeLimitMs: 7_200_000 });
        const none = await store.jobs.enqueue({ key: 'none' });

        const hosts = await (await fetch(`${server.url}/hosts`)).text();
        const column = 'Time limit (jobs without their own)';
        assert.equal(cell(hosts, 'limited', column), '90m', hosts);
        assert.equal(cell(hosts, 'plain', column), '—');

        const queue = await (await fetch(`${server.url}/`)).text();
        assert.equal(cell(queue, String(own.job.id), 'Time limit'), '2h', queue);
        assert.equal(cell(queue, String(none.job.id), 'Time limit'), '—');
      } finally {
        await server.close();
      }
    });

    test('Hosts says whether each runner runs jobs without a command, as baton hosts does', async () => {
      const server = await startTestServer(await db.fresh());
      try {
        const { store } = server;
        for (const [name, agentCommand] of [
          ['able', true],
          ['bare', false],
          ['older', undefined],
        ] as const) {
          const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
          const capacity = { ramTotalMb: 8000, ramReservedMb: 0, ramFreeMb: 8000, slotsMax: 2 };
          await store.hosts.register({ name, session: session.id, agentCommand, ...capacity });
        }
        const hosts = await (await fetch(`${server.url}/hosts`)).text();
        const column = 'Agent command (jobs without their own)';
        assert.equal(cell(hosts, 'able', column), 'yes', hosts);
        assert.equal(cell(hosts, 'bare', column), 'no: they wait for another host');
        assert.equal(cell(hosts, 'older', column), 'not reported (taken as yes)');
      } finally {
        await server.close();
      }
    });
  });
}
