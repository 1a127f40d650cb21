/**
 * `baton report sessions` end to end, on both engines: the JSON shape other tools rely on, CSV, the
 * filters, and the `session_report` view for people who query with SQL.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { cliOn } from '../support/cli.js';
import { rawSql } from '../support/raw-sql.js';

interface Row {
  readonly session: number;
  readonly host: string;
  readonly kind: string;
  readonly startedAt: string;
  readonly endedAt: string | null;
  readonly end: string;
  readonly issuesWorked: readonly { key: string; epoch: number; outcome: string | null }[];
}

for (const engine of bothEngines()) {
  void describe(`session report on ${engine.name}`, () => {
    test('prints per session its host, kind, start, end and how, issues worked, as JSON, CSV and a view', async () => {
      const db = await engine.fresh();
      const cli = cliOn(db);
      const a = (await cli.json<{ id: number }>(0, 'session', 'start', '--host', 'box-1')).id;
      const b = (await cli.json<{ id: number }>(0, 'session', 'start', '--host', 'box-2', '--kind', 'human'))
        .id;
      await cli.json(0, 'task', 'add', 'k-1');
      await cli.json(0, 'claim', 'k-1', '--session', String(a));
      await cli.json(0, 'release', 'k-1', '--session', String(a), '--epoch', '1', '--outcome', 'failed');
      await cli.json(0, 'claim', 'k-1', '--session', String(b));
      await cli.json(0, 'session', 'end', String(a));
      const rows = await cli.json<Row[]>(0, 'report', 'sessions');
      assert.deepEqual(
        rows.map((r) => [r.session, r.host, r.kind, r.end, r.endedAt === null]),
        [
          [a, 'box-1', 'agent', 'ended', false],
          [b, 'box-2', 'human', 'live', true],
        ],
      );
      assert.deepEqual(
        rows[0]?.issuesWorked.map(({ key, epoch, outcome }) => ({ key, epoch, outcome })),
        [{ key: 'k-1', epoch: 1, outcome: 'failed' }],
      );
      assert.deepEqual(
        rows[1]?.issuesWorked.map((w) => [w.key, w.epoch, w.outcome]),
        [['k-1', 2, null]],
      );
      assert.match(rows[0]?.startedAt ?? '', /^\d{4}-\d\d-\d\dT.*Z$/);
      const box2 = await cli.json<Row[]>(0, 'report', 'sessions', '--host', 'box-2');
      assert.deepEqual(
        box2.map((r) => r.session),
        [b],
      );
      const csv = await cli.run('report', 'sessions', '--csv');
      assert.equal(csv.code, 0, csv.stderr);
      const lines = csv.stdout.trimEnd().split('\n');
      assert.equal(
        lines[0],
        'session,kind,host,pid,name,startedAt,endedAt,end,issuesWorked,jobs,attempts,heldMs,escalations,' +
          'endReason,agentPid,endedBy',
      );
      assert.match(lines[1] ?? '', new RegExp(`^${a},agent,box-1,.*,ended,k-1@1:failed,.*,stopped,,$`));
      const table = await cli.run('report', 'sessions');
      assert.match(table.stdout, new RegExp(`^${a} .* stopped .*k-1@1:failed`, 'm'));
      const bad = await cli.run('report', 'sessions', '--since', 'yesterday-ish');
      assert.equal(bad.code, 2);
      const raw = await rawSql(engine, db);
      try {
        const view = await raw.exec(
          'SELECT session, host, end_state, end_reason FROM session_report ORDER BY session',
        );
        assert.deepEqual(
          view.map((r) => [Number(r['session']), r['host'], r['end_state'], r['end_reason']]),
          [
            [a, 'box-1', 'ended', 'stopped'],
            [b, 'box-2', 'live', null],
          ],
        );
      } finally {
        await raw.close();
      }
    });
  });
}
