/**
 * Task dependencies on the command line, both engines, with --db and over HTTP
 * (docs/decisions/0035-task-dependencies.md): `task add --after`, `task depend | undepend --on`,
 * `task show`, and their refusals: one line, the documented exit code, nothing changed.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';

interface Links {
  waitsFor: { key: string; state: string }[];
  waitedBy: { key: string; state: string }[];
}
const keys = (links: Links) => ({
  waitsFor: links.waitsFor.map((link) => link.key),
  waitedBy: links.waitedBy.map((link) => link.key),
});

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: task dependencies on the command line, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('add --after, depend, undepend, show; a cycle, an unknown key, a missing edge change nothing', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'a', '--title', 'add the migration');
        const added = await t.run('task', 'add', 'b', '--after', 'a');
        assert.equal(added.code, 0, added.stderr);
        assert.equal(added.stdout.trim(), 'added b (priority 100, waits for a)');
        await t.json(0, 'task', 'add', 'c');
        const depended = await t.json<Links>(0, 'task', 'depend', 'c', '--on', 'b');
        assert.deepEqual(keys(depended), { waitsFor: ['b'], waitedBy: [] });

        const shown = await t.json<{ dependencies: Links }>(0, 'task', 'show', 'b');
        assert.deepEqual(keys(shown.dependencies), { waitsFor: ['a'], waitedBy: ['c'] });
        const text = await t.run('task', 'show', 'b');
        assert.match(text.stdout, /\n {2}blocked: waits for a:\n {4}a \(open\) {2}add the migration\n/);
        assert.match(text.stdout, /\n {2}waited for by:\n {4}c \(open\)\n/);

        const cycle = await t.run('task', 'depend', 'a', '--on', 'c');
        assert.equal(cycle.code, 2);
        assert.match(cycle.stderr, /^baton: task a cannot depend on c: c already waits .* for a, a cycle/);
        assert.equal(cycle.stderr.trim().split('\n').length, 1, cycle.stderr);
        const unknown = await t.run('task', 'add', 'd', '--after', 'nope');
        assert.equal(unknown.code, 4, unknown.stderr);
        assert.match(unknown.stderr, /^baton: task nope not found/);
        assert.equal((await t.run('task', 'show', 'd')).code, 4, 'd was not added');
        // The first edge would be added, the second names no task: the task and its edges are one step.
        const partly = await t.run('task', 'add', 'd', '--after', 'a', '--after', 'nope');
        assert.equal(partly.code, 4, partly.stderr);
        assert.equal(partly.stderr.trim().split('\n').length, 1, partly.stderr);
        assert.equal((await t.run('task', 'show', 'd')).code, 4, 'd was not added');
        assert.equal((await t.run('task', 'depend', 'a', '--on', 'nope')).code, 4);
        assert.equal((await t.run('task', 'depend', 'a', '--on', 'a')).code, 2);
        assert.equal((await t.run('task', 'undepend', 'a', '--on', 'b')).code, 3, 'no such edge');
        assert.deepEqual(keys((await t.json<{ dependencies: Links }>(0, 'task', 'show', 'a')).dependencies), {
          waitsFor: [],
          waitedBy: ['b'],
        });

        // --session is recorded in the ledger row, with --db and over HTTP alike.
        const session = Number(await t.session());
        await t.json(0, 'task', 'add', 'e');
        await t.json(0, 'task', 'depend', 'e', '--on', 'a', '--session', String(session));
        const removed = await t.run('task', 'undepend', 'c', '--on', 'b', '--session', String(session));
        assert.equal(removed.code, 0, removed.stderr);
        assert.equal(removed.stdout.split('\n')[0], 'c no longer waits for b');
        const ledger = await t.json<
          { key: string; session: number | null; detail: Record<string, unknown> }[]
        >(0, 'audit', '--type', 'task:depended');
        assert.deepEqual(ledger.map((row) => [row.key, row.detail['on'], row.session]).sort(), [
          ['b', 'a', null],
          ['c', 'b', null],
          ['e', 'a', session],
        ]);
        const undone = await t.json<
          { key: string; session: number | null; detail: Record<string, unknown> }[]
        >(0, 'audit', '--type', 'task:undepended');
        assert.deepEqual(
          undone.map((row) => [row.key, row.detail['on'], row.session]),
          [['c', 'b', session]],
        );
      });

      test('task list --blocked with WAITS_FOR, the history of edges, why a held job waits, more jobs', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'a', '--label', 'api');
        await t.json(0, 'task', 'add', 'b', '--after', 'a', '--label', 'api', '--priority', '5');
        await t.json(0, 'task', 'add', 'c', '--project', 'web');
        await t.json(0, 'task', 'depend', 'c', '--on', 'a');
        await t.json(0, 'task', 'add', 'd', '--label', 'api');

        const blocked = await t.json<{ key: string; waitsFor: string[] }[]>(0, 'task', 'list', '--blocked');
        assert.deepEqual(
          blocked.map((task) => [task.key, task.waitsFor]),
          [
            ['b', ['a']],
            ['c', ['a']],
          ],
        );
        const narrowed = await t.json<{ key: string }[]>(0, 'task', 'list', '--blocked', '--label', 'api');
        assert.deepEqual(
          narrowed.map((task) => task.key),
          ['b'],
        );
        const text = await t.run('task', 'list', '--blocked', '--project', 'web');
        assert.equal(text.code, 0, text.stderr);
        assert.match(text.stdout, /^KEY +STATE +PRIORITY +PROJECT +ASSIGNEE +HOLDER +WAITS_FOR +TITLE\n/);
        assert.match(text.stdout, /\nc +open +100 +web +- +- +a +-?\n/);
        const free = await t.run('task', 'list', '--label', 'api', '--state', 'open');
        assert.match(free.stdout, /\nb +open +5 .* a /);
        assert.match(free.stdout, /\nd +open +100 +- +- +- +- /, 'd waits for nothing');

        // The history lists edge changes in order with the state changes.
        await t.json(0, 'task', 'undepend', 'c', '--on', 'a');
        await t.json(0, 'close', 'c');
        const story = await t.json<{ history: { type: string; on: string | null; to: string | null }[] }>(
          0,
          'task',
          'show',
          'c',
        );
        assert.deepEqual(
          story.history.map((event) => [event.type, event.on ?? event.to]),
          [
            ['task:depended', 'a'],
            ['task:undepended', 'a'],
            ['task:state', 'closed'],
          ],
        );
        const shown = await t.run('task', 'show', 'c');
        assert.match(
          shown.stdout,
          /\n {2}history:\n {4}\S+ {2}waits for a by [^\n]+\n {4}\S+ {2}no longer waits for a by /,
        );

        // No dispatcher has run: the held jobs' reasons are read, not stored.
        const job = await t.json<{ job: { id: number } }>(0, 'enqueue', 'b');
        await t.json(0, 'gate', 'd', 'design');
        await t.json(0, 'enqueue', 'd');
        const queue = await t.json<{ key: string; reason: string | null }[]>(0, 'queue', 'list');
        assert.deepEqual(
          queue.map((queued) => [queued.key, queued.reason]),
          [
            ['b', 'waits for task a (open)'],
            ['d', 'waiting for design approval'],
          ],
        );
        const one = await t.json<{ reason: string | null }>(0, 'job', 'show', String(job.job.id));
        assert.equal(one.reason, 'waits for task a (open)');

        // Eleven jobs: task show shows ten and says where the rest are.
        await t.json(0, 'cancel', String(job.job.id));
        for (let index = 0; index < 10; index += 1) {
          const next = await t.json<{ job: { id: number } }>(0, 'enqueue', 'b');
          if (index < 9) await t.json(0, 'cancel', String(next.job.id));
        }
        const many = await t.run('task', 'show', 'b');
        assert.match(many.stdout, /\n {2}jobs \(the first 10; all of them: `baton queue list --key b`\):\n/);
        assert.equal((await t.json<{ moreJobs: boolean }>(0, 'task', 'show', 'b')).moreJobs, true);
        assert.equal((await t.json<{ moreJobs: boolean }>(0, 'task', 'show', 'a')).moreJobs, false);
      });
    });
  }
