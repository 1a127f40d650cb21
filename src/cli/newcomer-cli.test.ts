/**
 * End-to-end tests of what a newcomer walking the README met: the wording of a job without
 * progress marks, an unknown project or label, an epoch never granted, and files `baton audit` cannot use.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { stopServers } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

describeCli('baton as the README walks it', ({ setup }) => {
  test('shows a job without progress marks as none reported', async () => {
    const t = await setup();
    const s = await t.session('--kind', 'agent');
    await t.json(0, 'enqueue', 'quick', '--command', 'true');
    const job = await t.json<{ id: number; epoch: number }>(0, 'job', 'next', '--session', s);
    const running = await t.run('job', 'show', String(job.id));
    assert.equal(running.code, 0, running.stderr);
    assert.match(running.stdout, /^ {2}progress: none reported$/m);
    assert.doesNotMatch(running.stdout, /no marks|last progress/);
    await t.json(0, 'job', 'finish', String(job.id), '--session', s, '--epoch', String(job.epoch));
    const done = await t.run('job', 'show', String(job.id));
    assert.match(
      done.stdout,
      /: done\n[\s\S]* {2}progress: none reported\n {2}runs:\n {4}attempt 1 on \S+ at \S+: done\n$/,
    );
  });

  test('tells an epoch never granted from one fenced off, one held by another session and a free task', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const a = await t.session();
    const b = await t.session('--host', 'other-host');
    assert.equal(await t.claim('k1', a), '1');
    const beat = (s: string, epoch: string): Promise<string> =>
      t.run('heartbeat', s, '--key', 'k1', '--epoch', epoch).then((run) => assertOneErrorLine(run, 3, epoch));
    const held = `it is held by session ${a} on \\S+ since \\S+ \\(epoch 1\\)`;
    assert.match(
      await beat(a, '7'),
      new RegExp(`^baton: epoch 7 was never granted for k1: ${held} — give the epoch`),
    );
    assert.match(
      await beat(b, '1'),
      new RegExp(`^baton: the claim on k1 at epoch 1 is not this session's: ${held}`),
    );
    const never = await t.json<{ error: string; epoch: number }>(
      3,
      'heartbeat',
      a,
      '--key',
      'k1',
      '--epoch',
      '7',
    );
    assert.deepEqual([never.error, never.epoch], ['fenced', 7]);
    await t.json(0, 'release', 'k1', '--session', a, '--epoch', '1');
    assert.match(
      await beat(a, '1'),
      /^baton: the claim on k1 at epoch 1 is not current: no one holds it now — /,
    );
    assert.equal(await t.claim('k1', b), '2');
    assert.match(
      await beat(a, '1'),
      /at epoch 1 is no longer current: it is now held by session \d+ on other-host/,
    );
    // An ended session is told so, and who holds the task now (the store once named no one).
    await t.json(0, 'session', 'end', a);
    const ended = `its session has ended, and k1 is held by session ${b} on other-host since \\S+ \\(epoch 2\\)`;
    assert.match(
      await beat(a, '1'),
      new RegExp(
        `^baton: the claim on k1 at epoch 1 is not current: ${ended} — stop working on it; start a new session`,
      ),
    );
  });

  test('refuses a --project no task has and none registered with exit 4, naming the known ones', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1', '--project', 'alpha');
    await t.json(0, 'project', 'add', 'beta');
    const s = await t.session();
    const before = await t.counts();
    const known = /^baton: project nope not found — known projects: alpha, beta$/;
    assert.match(assertOneErrorLine(await t.run('next', '--project', 'nope'), 4, 'no session'), known);
    assert.match(
      assertOneErrorLine(await t.run('next', '--project', 'nope', '--session', s), 4, 'session'),
      known,
    );
    const refused = await t.json(4, 'next', '--project', 'nope');
    assert.deepEqual([refused['error'], refused['message']], ['not_found', 'project nope not found']);
    assert.deepEqual(await t.counts(), before, 'no session started, nothing written');
    // A registered project without tasks is known, and just has nothing eligible.
    const empty = assertOneErrorLine(await t.run('next', '--project', 'beta', '--session', s), 4, 'beta');
    assert.match(empty, /^baton: no eligible task: nothing open is free/);
    assert.equal((await t.json(0, 'next', '--project', 'alpha', '--session', s))['key'], 'a1');
  });

  test('refuses a --label no task has, done ones included, with exit 4, naming the known ones', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1', '--label', 'ui');
    await t.json(0, 'task', 'add', 'old', '--label', 'legacy', '--label', 'ui');
    await t.json(0, 'close', 'old', '--done');
    const s = await t.session();
    const before = await t.counts();
    const known = /^baton: label nope not found — known labels: legacy, ui$/;
    assert.match(assertOneErrorLine(await t.run('next', '--label', 'nope'), 4, 'no session'), known);
    assert.match(
      assertOneErrorLine(await t.run('next', '--label', 'nope', '--session', s), 4, 'session'),
      known,
    );
    const refused = await t.json(4, 'next', '--label', 'nope');
    assert.deepEqual([refused['error'], refused['message']], ['not_found', 'label nope not found']);
    assert.deepEqual(await t.counts(), before, 'no session started, nothing written');
    // A label only a done task has is known, and just has nothing eligible.
    const empty = assertOneErrorLine(await t.run('next', '--label', 'legacy', '--session', s), 4, 'legacy');
    assert.match(empty, /^baton: no eligible task: nothing open is free/);
    assert.equal((await t.json(0, 'next', '--label', 'ui', '--session', s))['key'], 'a1');
  });
});
