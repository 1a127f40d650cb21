/**
 * The next-page command that `baton queue list`, `task list` and `audit` print when they stop at
 * their limit runs against the same store or API as the list did: it carries the `--db` or `--api`
 * the caller typed (a PostgreSQL URL without its password), never `--token`. Run as printed (the
 * password from PGPASSWORD, the token from BATON_TOKEN), it lists the next page.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { batonBare, servedApi, stopServers } from '../support/cli.js';
import { withoutPassword } from '../../src/core/redact.js';

after(stopServers);

const NEXT = /the next page: baton (.*)$/m;

/** A printed command's words, its single-quoted ones unquoted (as a shell would). */
const words = (command: string): string[] =>
  (command.match(/'[^']*'|\S+/g) ?? []).map((word) => word.replace(/^'(.*)'$/, '$1'));

/** Three tasks, each with a finished job: enough for a list of one to stop at its limit. */
async function given(target: string[], env: NodeJS.ProcessEnv): Promise<void> {
  for (const key of ['a', 'b', 'c']) {
    const made = await batonBare(env, ...target, 'enqueue', key, '--command', 'true', '--json');
    assert.equal(made.code, 0, made.stderr);
    const { job } = JSON.parse(made.stdout) as { job: { id: number } };
    const cancelled = await batonBare(env, ...target, 'cancel', String(job.id));
    assert.equal(cancelled.code, 0, cancelled.stderr);
  }
}

/** Lists one item, checks the printed command's target flags, runs it and returns its output. */
async function pageOn(target: string[], shown: string[], env: NodeJS.ProcessEnv, list: string[]) {
  const first = await batonBare(env, ...target, ...list, '--limit', '1');
  assert.equal(first.code, 0, first.stderr);
  const command = NEXT.exec(first.stdout)?.[1];
  assert.ok(command !== undefined, first.stdout);
  assert.deepEqual(words(command).slice(0, shown.length + list.length), [...shown, ...list], command);
  const next = await batonBare(env, ...words(command));
  assert.equal(next.code, 0, next.stderr);
  return { command, next: next.stdout };
}

for (const db of bothEngines()) {
  test(`the next page carries --db as typed, without a password, on ${db.name}`, async () => {
    const url = await db.fresh();
    const target = ['--db', url];
    await given(target, {});
    const shown = ['--db', withoutPassword(url)];
    const password = /:\/\/[^:/@]+:([^@]*)@/.exec(url)?.[1];
    const env = password === undefined ? {} : { PGPASSWORD: password };
    for (const list of [['queue', 'list', '--status', 'cancelled'], ['task', 'list'], ['audit']]) {
      const { command, next } = await pageOn(target, shown, env, list);
      if (password !== undefined) assert.ok(!command.includes(`:${password}@`), command);
      const shownNext = { queue: /cancelled/, task: /\bb\b/, audit: /job:enqueued|task:/ }[list[0] ?? ''];
      assert.match(next, shownNext ?? /^$/, next);
    }
  });
}

test('the next page carries --api as typed and never the token', async () => {
  const [sqlite] = bothEngines();
  assert.ok(sqlite !== undefined);
  const { url, token } = await servedApi(await sqlite.fresh());
  await given(['--api', url, '--token', token], {});
  for (const list of [['queue', 'list', '--status', 'cancelled'], ['task', 'list'], ['audit']]) {
    const { command } = await pageOn(
      ['--api', url, '--token', token],
      ['--api', url],
      { BATON_TOKEN: token },
      list,
    );
    assert.ok(!command.includes(token), command);
  }
});
