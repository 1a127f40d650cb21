/**
 * `baton audit`'s list filters (--task, --type, --limit, ...) sit on the parent command, and commander
 * takes them on every subcommand too: a subcommand that does not read one refuses it (exit 2) before
 * anything is opened, instead of pruning or exporting the whole ledger as if it had not been given.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { cliOn } from '../support/cli.js';
import { someActivity, withLedger } from './ledger-fixture.js';

const [engine] = bothEngines();

void describe('the audit list filters on a subcommand', { skip: engine === undefined }, () => {
  test('prune and export refuse a list filter they do not read, changing nothing', () =>
    withLedger(engine!, async (f) => {
      const cli = cliOn(f.url);
      await someActivity(f.store);
      await cli.json(0, 'audit', 'seal', '--key-file', f.keyFile);
      const before = (await cli.json<unknown[]>(0, 'audit')).length;
      assert.ok(before > 10, `${before} rows`);
      const prune = ['audit', 'prune', '--before', '2999-01-01', '--key-file', f.keyFile];
      for (const [flag, value] of [
        ['--task', 'task-0'],
        ['--type', 'claim:granted'],
        ['--limit', '1'],
        ['--job', '1'],
        ['--after', '1'],
        ['--follow', undefined],
      ] as const) {
        const refused = await cli.run(...prune, ...(value === undefined ? [flag] : [flag, value]));
        assert.equal(refused.code, 2, refused.stderr);
        assert.equal(
          refused.stderr,
          `baton: ${flag} belongs to \`baton audit\` (the list), not \`baton audit prune\`` +
            ' — leave it out; `baton audit prune --help` lists what it takes\n',
        );
      }
      assert.equal((await cli.json<unknown[]>(0, 'audit')).length, before, 'nothing pruned');
      const exported = await cli.run('audit', 'export', '--format', 'jsonl', '--limit', '1');
      assert.equal(exported.code, 2, exported.stderr);
      assert.equal(exported.stdout, '');
      assert.match(
        exported.stderr,
        /^baton: --limit belongs to `baton audit` \(the list\), not `baton audit export`/,
      );
      // The filters export does read are still its own.
      const task = await cli.run('audit', 'export', '--format', 'jsonl', '--task', 'task-1');
      assert.equal(task.code, 0, task.stderr);
      const rows = task.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { record: string; row?: { task_key: unknown } })
        .filter((line) => line.record === 'row');
      assert.ok(rows.length > 1 && rows.length < before, `${rows.length} of ${before} rows`);
      assert.ok(rows.every((line) => line.row?.task_key === 'task-1'));
    }));
});
