/**
 * `baton hooks install claude` refuses what would leave a Claude Code session unguarded or write
 * where nobody meant: a --task the database does not hold (exit 4, unless --task-added-later), and
 * a --dir that does not exist (exit 2); nothing is written either way.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import { baton } from '../../test/support/cli.js';
import { assertOneErrorLine } from '../../test/support/cli-suite.js';
import { bothEngines } from '../../test/support/databases.js';

const KEY = 'github:acme/api#7';
const TYPO = 'github:acme/api#77';

for (const database of bothEngines()) {
  describe(`baton hooks install claude --task (${database.name})`, () => {
    test('refuses a task the database does not hold, writing nothing, unless it is to be added later', async () => {
      const db = await database.fresh();
      const store = await openStore(db);
      try {
        await store.tasks.add({ key: KEY, title: 'Fix the login race' });
      } finally {
        await store.close();
      }
      const dir = mkdtempSync(join(tmpdir(), 'baton-hooks-task-'));
      const settings = join(dir, '.claude', 'settings.json');
      const refused = await baton(db, 'hooks', 'install', 'claude', '--dir', dir, '--task', TYPO);
      assert.match(
        assertOneErrorLine(refused, 4, 'a task not in Baton'),
        new RegExp(
          '^baton: task github:acme/api#77 not found — the hooks would claim nothing and guard no edit; ' +
            'add it with `baton task add github:acme/api#77`, find its key with `baton task list`, ' +
            'or give --task-added-later',
        ),
      );
      assert.equal(existsSync(join(dir, '.claude')), false, 'nothing written');
      const json = await baton(db, '--json', 'hooks', 'install', 'claude', '--dir', dir, '--task', TYPO);
      assert.equal(json.code, 4);
      assert.equal((JSON.parse(json.stdout) as { error: string }).error, 'not_found');

      const later = await baton(
        db,
        'hooks',
        'install',
        'claude',
        '--dir',
        dir,
        '--task',
        TYPO,
        '--task-added-later',
      );
      assert.equal(later.code, 0, later.stderr);
      assert.equal(later.stderr, '');
      assert.match(readFileSync(settings, 'utf8'), /hook pre-tool .* --task 'github:acme\/api#77'/);

      const known = await baton(db, 'hooks', 'install', 'claude', '--dir', dir, '--task', KEY);
      assert.equal(known.code, 0, known.stderr);
      assert.equal(known.stderr, '', 'a task the database holds: no warning');
      assert.match(readFileSync(settings, 'utf8'), /hook pre-tool .* --task 'github:acme\/api#7'/);
    });
  });
}

describe('baton hooks install claude', () => {
  test('warns, and installs, when the database cannot be asked about --task; it creates no database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-hooks-nodb-'));
    const db = join(dir, 'missing.db');
    const r = await baton(db, '--json', 'hooks', 'install', 'claude', '--dir', dir, '--task', KEY);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      assertOneErrorLine({ ...r, code: 0 }, 0, 'unreachable'),
      /^baton: warning: could not check that task github:acme\/api#7 is in Baton \(database .*missing\.db not found/,
    );
    assert.match((JSON.parse(r.stdout) as { warning: string }).warning, /could not check that task/);
    assert.equal(existsSync(db), false, 'no database created');
    assert.ok(existsSync(join(dir, '.claude', 'settings.json')));
  });

  test('refuses a --dir that does not exist: one line naming it, exit 2, nothing created', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'baton-hooks-dir-'));
    const missing = join(parent, 'no-such-project');
    const db = join(parent, 'b.db');
    for (const args of [
      ['hooks', 'install', 'claude', '--dir', missing],
      ['hooks', 'uninstall', '--dir', missing],
    ]) {
      const line = assertOneErrorLine(await baton(db, ...args), 2, args[1] ?? '');
      assert.equal(
        line,
        `baton: --dir ${missing} is not a directory that exists; nothing was written — ` +
          'give the root of the project (where .claude/ goes), or create the directory first',
      );
      assert.equal(existsSync(missing), false, `${args[1]}: the directory was not created`);
    }
  });
});
