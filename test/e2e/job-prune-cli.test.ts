/**
 * `baton job prune` (docs/decisions/0039-job-retention.md) in every mode an operator command has:
 * on the database (--db) and over HTTP with an operator token. Finished jobs are aged with SQL on
 * the database rather than waited for. Every reader of a removed job id says so (exit 4), the
 * ledger still tells its story, and bad input is one line, exit 2, with nothing removed.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { cliModes, cliOn, stopServers } from '../support/cli.js';
import { rawSql } from '../support/raw-sql.js';

type Obj = Record<string, unknown>;

after(stopServers);

for (const db of bothEngines()) {
  for (const mode of cliModes(db.engine)) {
    const how = mode === 'db' ? 'with --db' : 'over HTTP';
    test(`job prune removes old finished jobs, readers of one say so, bad input changes nothing, on ${db.name} ${how}`, async () => {
      const url = await db.fresh();
      const t = cliOn(url, mode);
      const ids: number[] = [];
      let { job } = await t.json<{ job: Obj }>(0, 'enqueue', 'k1', '--command', 'true');
      ids.push(Number(job['id']));
      for (let index = 0; index < 2; index++) {
        await t.json(0, 'cancel', String(job['id']));
        ({ job } = await t.json<{ job: Obj }>(0, 'retry', String(job['id'])));
        ids.push(Number(job['id']));
      }
      const raw = await rawSql(db, url);
      try {
        await raw.exec(
          db.engine === 'sqlite'
            ? 'UPDATE jobs SET finished_at = finished_at - 2 * 86400000 WHERE finished_at IS NOT NULL'
            : "UPDATE jobs SET finished_at = finished_at - interval '2 days' WHERE finished_at IS NOT NULL",
        );
      } finally {
        await raw.close();
      }
      const [first, second, live] = ids as [number, number, number];
      const bads = [['--older-than', 'soon'], ['--older-than', 'off'], ['--older-than', '0'], []];
      // A bare number (seconds elsewhere) and less than an hour would remove nearly every job.
      bads.push(['--older-than', '30'], ['--older-than', '30m']);
      for (const bad of bads) {
        const refused = await t.run('job', 'prune', ...bad);
        assert.equal(refused.code, 2, `job prune ${bad.join(' ')}: ${refused.stderr}`);
        assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
      }
      assert.match(
        (await t.run('job', 'prune', '--older-than', '30')).stderr,
        /^baton: --older-than needs a unit, got "30" — write it with one, e.g. --older-than 30d \(or 12h\)\n$/,
      );
      const dry = await t.json(0, 'job', 'prune', '--older-than', '1d', '--dry-run');
      assert.equal(dry['removed'], 2);
      assert.equal(dry['dryRun'], true);
      assert.equal((await t.json(0, 'job', 'show', String(first)))['id'], first, 'nothing removed yet');
      const kept = await t.run('job', 'prune', '--older-than', '3d');
      assert.equal(kept.code, 0, kept.stderr);
      assert.match(kept.stdout, /^removed 0 finished jobs that ended before \S+Z\n$/);
      const pruned = await t.run('job', 'prune', '--older-than', '1d');
      assert.equal(pruned.code, 0, pruned.stderr);
      assert.match(pruned.stdout, /^removed 2 finished jobs that ended before \S+Z\n$/);
      for (const args of [
        ['job', 'show', String(first)],
        ['retry', String(second)],
        ['job', 'log', String(first)],
      ]) {
        const gone = await t.run(...args);
        assert.equal(gone.code, 4, `baton ${args.join(' ')}: ${gone.stderr}`);
        assert.match(gone.stderr, /^baton: job \d+ not found — it may have been removed by job retention/);
        assert.match(gone.stderr, /its ledger rows remain: baton audit --job \d+\n$/);
      }
      const history = await t.json<Obj[]>(0, 'audit', '--job', String(first));
      assert.ok(
        history.some((row) => row['type'] === 'job:cancelled'),
        "the ledger keeps the removed job's rows",
      );
      const rows = await t.json<Obj[]>(0, 'audit', '--type', 'jobs:pruned');
      assert.equal(rows.length, 1);
      assert.match(String((rows[0]?.['detail'] as Obj)['by']), mode === 'db' ? /@/ : /^token /);
      assert.equal((await t.json(0, 'job', 'show', String(live)))['status'], 'queued', 'the live job stays');
    });
  }
}
