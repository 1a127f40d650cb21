/**
 * `baton task list --after KEY` (docs/decisions/0045-task-list-paging-and-status-hosts.md): a list
 * that stopped at its limit ends with the exact command for the next page, the same filters and
 * `--after` its last key; running that command, page after page, lists every task once, by
 * priority then key. An `--after` no task has: one line, exit 2, nothing on stdout.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { cliModes, cliOn, stopServers } from '../support/cli.js';

after(stopServers);

/** The keys in a `task list` table (its first column, after the header), in the order shown. */
const shownKeys = (stdout: string): string[] =>
  stdout
    .split('\n')
    .slice(1)
    .filter((line) => line !== '' && !line.startsWith('stopped at the limit') && line !== 'no tasks')
    .map((line) => line.split(/\s+/)[0] ?? '');

const NEXT = /the next page: (baton task list .*)$/m;

/** A printed command's words, its single-quoted ones unquoted (as a shell would). */
const words = (command: string): string[] =>
  (command.replace(/^baton /, '').match(/'[^']*'|\S+/g) ?? []).map((word) => word.replace(/^'(.*)'$/, '$1'));

for (const db of bothEngines()) {
  for (const mode of cliModes(db.engine)) {
    const how = mode === 'db' ? 'with --db' : 'over HTTP';
    test(`task list pages through every task with --after, on ${db.name} ${how}`, async () => {
      const t = cliOn(await db.fresh(), mode);
      // By priority, then key: c, a, b, 'x#1', d, e.
      for (const [key, priority] of [
        ['a', 2],
        ['b', 2],
        ['c', 1],
        ['d', 5],
        ['e', 5],
        ['x#1', 3],
      ] as const) {
        await t.json(0, 'task', 'add', key, '--priority', String(priority));
      }
      await t.json(0, 'close', 'd');

      const first = await t.run('task', 'list', '--limit', '2');
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(shownKeys(first.stdout), ['c', 'a']);
      assert.equal(NEXT.exec(first.stdout)?.[1], 'baton task list --limit 2 --after a', first.stdout);
      const pages: string[][] = [];
      let command = NEXT.exec(first.stdout)?.[1];
      while (command !== undefined && pages.length < 5) {
        const page = await t.run(...words(command));
        assert.equal(page.code, 0, page.stderr);
        pages.push(shownKeys(page.stdout));
        command = NEXT.exec(page.stdout)?.[1];
      }
      // A full page says where the next starts, so the last full one is followed by an empty one.
      assert.deepEqual(pages, [['b', 'x#1'], ['d', 'e'], []]);
      const second = await t.run('task', 'list', '--limit', '2', '--after', 'a');
      assert.equal(NEXT.exec(second.stdout)?.[1], "baton task list --limit 2 --after 'x#1'", second.stdout);

      // The filters carried, and a page short of its limit names no next one.
      const open = await t.run('task', 'list', '--state', 'open', '--limit', '1', '--after', 'x#1');
      assert.deepEqual(shownKeys(open.stdout), ['e']);
      assert.equal(NEXT.exec(open.stdout)?.[1], 'baton task list --state open --limit 1 --after e');
      const short = await t.run('task', 'list', '--state', 'open', '--limit', '9');
      assert.doesNotMatch(short.stdout, /the next page/, short.stdout);
      const json = await t.json<{ key: string }[]>(0, 'task', 'list', '--after', 'x#1');
      assert.deepEqual(
        json.map((task) => task.key),
        ['d', 'e'],
      );

      for (const [bad, message] of [
        ['nope', /after must be the key of a task, and no task has the key "nope"/],
        ['', /task key is missing/],
      ] as const) {
        const refused = await t.run('task', 'list', '--after', bad);
        assert.equal(refused.code, 2, `--after ${JSON.stringify(bad)}: ${refused.stderr}`);
        assert.equal(refused.stdout, '');
        assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
        assert.match(refused.stderr, message);
      }
    });
  }
}
