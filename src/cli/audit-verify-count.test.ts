/**
 * `baton audit verify` lists ten problems a line and counts the rest: the ops walk's export with 13
 * problems printed `ledger NOT intact: 13 problems` and ten lines, with nothing saying 3 were left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baton } from '../../test/support/cli.js';
import { sqliteDatabase } from '../../test/support/databases.js';

async function ok(db: string, ...args: string[]): Promise<string> {
  const run = await baton(db, ...args);
  assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

test('a ledger with more problems than it lists says how many are not shown', async () => {
  const db = await sqliteDatabase().fresh();
  const dir = mkdtempSync(join(tmpdir(), 'baton-verify-count-'));
  for (let n = 1; n <= 13; n++) await ok(db, 'task', 'add', `t${n}`, '--title', 'x');
  await ok(db, 'ledger', 'init', '--key-file', join(dir, 'ledger.key'));
  await ok(db, 'audit', 'seal', '--key-file', join(dir, 'ledger.key'));
  const exported = await ok(db, 'audit', 'export', '--format', 'jsonl');
  const by = /"by\\":\\"[^\\]*\\"/.exec(exported)?.[0];
  assert.ok(by !== undefined, exported.slice(0, 400));
  const edited = join(dir, 'edited.jsonl');
  writeFileSync(edited, exported.replaceAll(by, '"by\\":\\"mallory\\"'));
  assert.notEqual(readFileSync(edited, 'utf8'), exported);
  const run = await baton(db, 'audit', 'verify', '--file', edited);
  assert.equal(run.code, 1, run.stderr);
  const count = Number(/^ledger NOT intact: (\d+) problems$/m.exec(run.stdout)?.[1]);
  assert.ok(count > 10, run.stdout);
  assert.equal(run.stdout.match(/^ {2}row \d+ edited: /gm)?.length, 10);
  assert.match(run.stdout, new RegExp(`^ {2}and ${count - 10} more problems not shown`, 'm'));
});
