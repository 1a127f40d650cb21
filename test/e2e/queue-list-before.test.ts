/**
 * `baton queue list --before ID` (docs/decisions/0041-reads-at-a-million-jobs.md, paging): a list
 * that stopped at its limit among the finished jobs ends with the exact command for the next page,
 * and running that command, page after page, lists every finished job once, newest first. A
 * `--before` that is not a positive whole number: one line, exit 2.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { cliModes, cliOn, stopServers } from '../support/cli.js';

after(stopServers);

/** The ids in a `queue list` table (its first column), in the order shown. */
const shownIds = (stdout: string): number[] =>
  stdout
    .split('\n')
    .map((line) => /^\s*(\d+)\s/.exec(line)?.[1])
    .filter((id): id is string => id !== undefined)
    .map(Number);

for (const db of bothEngines()) {
  for (const mode of cliModes(db.engine)) {
    const how = mode === 'db' ? 'with --db' : 'over HTTP';
    test(`queue list pages back through the finished jobs with --before, on ${db.name} ${how}`, async () => {
      const t = cliOn(await db.fresh(), mode);
      const finished: number[] = [];
      for (let index = 0; index < 5; index++) {
        const { job } = await t.json<{ job: { id: number } }>(
          0,
          'enqueue',
          `done-${index}`,
          '--command',
          'true',
        );
        await t.json(0, 'cancel', String(job.id));
        finished.push(job.id);
      }
      const { job: queued } = await t.json<{ job: { id: number } }>(
        0,
        'enqueue',
        "o'brien",
        '--command',
        'true',
      );
      const newestFirst = [...finished].reverse();

      const first = await t.run('queue', 'list', '--limit', '3');
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(shownIds(first.stdout), [queued.id, ...newestFirst.slice(0, 2)]);
      const next = /the next page: (baton queue list .*)$/m.exec(first.stdout)?.[1];
      assert.equal(next, `baton queue list --limit 3 --before ${newestFirst[1]}`, first.stdout);
      const pages: number[][] = [];
      let command: string | undefined = next;
      while (command !== undefined) {
        const page = await t.run(...command.replace(/^baton /, '').split(' '));
        assert.equal(page.code, 0, page.stderr);
        pages.push(shownIds(page.stdout));
        command = /the next page: (baton queue list .*)$/m.exec(page.stdout)?.[1];
      }
      // 3 left: one full page (which says where the next starts), then an empty one.
      assert.deepEqual(pages, [newestFirst.slice(2), []]);

      const live = await t.run('queue', 'list', '--limit', '1');
      assert.doesNotMatch(live.stdout, /the next page/, 'a page ending on a live job names no --before');
      // The same filters carried into the command.
      const byStatus = await t.run('queue', 'list', '--status', 'cancelled', '--limit', '2');
      assert.match(
        byStatus.stdout,
        new RegExp(
          `the next page: baton queue list --status cancelled --limit 2 --before ${newestFirst[1]}\\n`,
        ),
      );
      const json = await t.json<{ id: number }[]>(0, 'queue', 'list', '--before', String(newestFirst[0]));
      assert.deepEqual(
        json.map((job) => job.id),
        newestFirst.slice(1),
      );

      for (const bad of ['abc', '0', '-3', '1.5', '']) {
        const refused = await t.run('queue', 'list', '--before', bad);
        assert.equal(refused.code, 2, `--before ${JSON.stringify(bad)}: ${refused.stderr}`);
        assert.equal(refused.stdout, '');
        assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
        assert.match(refused.stderr, /before id must be /);
      }
    });
  }
}
