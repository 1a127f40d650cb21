/**
 * End-to-end tests of what a newcomer walking the README met: the wording of a job without
 * progress marks, an unknown project or label (to `next` and `task list`), an epoch never granted, a release
 * from an ended session, and files `baton audit` cannot use.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { stopServers } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli, type CliSuite } from '../../test/support/cli-suite.js';

after(stopServers);

type Cli = Awaited<ReturnType<CliSuite['setup']>>;

/** `next --project nope` or `--label nope`, with and without a session: one line, exit 4, nothing written. */
async function refusesUnknown(t: Cli, what: 'project' | 'label', known: string): Promise<void> {
  const s = await t.session();
  const before = await t.counts();
  const line = new RegExp(`^baton: ${what} nope not found — known ${what}s: ${known}$`);
  assert.match(assertOneErrorLine(await t.run('next', `--${what}`, 'nope'), 4, 'no session'), line);
  assert.match(
    assertOneErrorLine(await t.run('next', `--${what}`, 'nope', '--session', s), 4, 'session'),
    line,
  );
  const refused = await t.json(4, 'next', `--${what}`, 'nope');
  assert.deepEqual([refused['error'], refused['message']], ['not_found', `${what} nope not found`]);
  assert.deepEqual(await t.counts(), before, 'no session started, nothing written');
}

/** A known project or label with nothing open to take: "no eligible task", exit 4. */
async function hasNothingFor(t: Cli, what: 'project' | 'label', name: string): Promise<void> {
  const s = await t.session();
  const empty = assertOneErrorLine(await t.run('next', `--${what}`, name, '--session', s), 4, name);
  assert.match(empty, /^baton: no eligible task: nothing open is free/);
}

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
    // Its own claim at another epoch: told the epoch it holds, not that it was fenced off (0059).
    assert.match(
      await beat(a, '7'),
      new RegExp(
        `^baton: epoch 7 was never granted for k1: you hold k1 at epoch 1 \\(session ${a} on \\S+ since \\S+\\); ` +
          "use that epoch — nothing changed; give epoch 1, your claim's, and carry on$",
      ),
    );
    assert.match(
      await beat(b, '7'),
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

  test('tells a release from an ended session that its session ended and who holds the task now', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const a = await t.session();
    const b = await t.session('--host', 'other-host');
    assert.equal(await t.claim('k1', a), '1');
    await t.json(0, 'session', 'end', a);
    const release = async () =>
      assertOneErrorLine(await t.run('release', 'k1', '--session', a, '--epoch', '1'), 3, 'release');
    const hint = ' — stop working on it; start a new session to claim it again if you still need it$';
    assert.match(
      await release(),
      new RegExp(
        `^baton: the claim on k1 at epoch 1 is not current: its session has ended, and no one holds k1 now${hint}`,
      ),
    );
    assert.equal(await t.claim('k1', b), '2');
    const held = `k1 is held by session ${b} on other-host since \\S+ \\(epoch 2\\)`;
    assert.match(
      await release(),
      new RegExp(
        `^baton: the claim on k1 at epoch 1 is not current: its session has ended, and ${held}${hint}`,
      ),
    );
    const refused = await t.json(3, 'release', 'k1', '--session', a, '--epoch', '1', '--outcome', 'done');
    assert.deepEqual([refused['error'], refused['sessionEnded']], ['fenced', true]);
    const shown = await t.json<{ task: { state: string }; holder: { session: number } }>(
      0,
      'task',
      'show',
      'k1',
    );
    assert.deepEqual([shown.task.state, shown.holder.session], ['open', Number(b)], 'nothing changed');
  });

  test('refuses a --project no task has and none registered with exit 4, naming the known ones', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1', '--project', 'alpha');
    await t.json(0, 'project', 'add', 'beta');
    await refusesUnknown(t, 'project', 'alpha, beta');
    // A registered project without tasks is known, and just has nothing eligible.
    await hasNothingFor(t, 'project', 'beta');
    assert.equal(
      (await t.json(0, 'next', '--project', 'alpha', '--session', await t.session()))['key'],
      'a1',
    );
  });

  test('refuses audit --task for a task no one added with exit 4; a known task shows its rows', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1');
    const line = assertOneErrorLine(await t.run('audit', '--task', 'nope'), 4, 'unknown task');
    assert.equal(line, 'baton: task nope not found — add it with `baton task add`');
    const known = await t.run('audit', '--task', 'a1');
    assert.equal(known.code, 0, known.stderr);
    assert.match(known.stdout, /task:added\s+a1/);
  });

  test('refuses a --label no task has, done ones included, with exit 4, naming the known ones', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1', '--label', 'ui');
    await t.json(0, 'task', 'add', 'old', '--label', 'legacy', '--label', 'ui');
    await t.json(0, 'close', 'old', '--done');
    await refusesUnknown(t, 'label', 'legacy, ui');
    // A label only a done task has is known, and just has nothing eligible.
    await hasNothingFor(t, 'label', 'legacy');
    assert.equal((await t.json(0, 'next', '--label', 'ui', '--session', await t.session()))['key'], 'a1');
  });

  test('lists the tasks with a --label, done ones included, and refuses a label no task has with exit 4', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1', '--label', 'ui');
    await t.json(0, 'task', 'add', 'old', '--label', 'legacy', '--label', 'ui');
    await t.json(0, 'task', 'add', 'plain');
    await t.json(0, 'close', 'old', '--done');
    const keys = async (...args: string[]) =>
      (await t.json<{ key: string }[]>(0, 'task', 'list', ...args)).map((task) => task.key);
    assert.deepEqual(await keys('--label', 'ui'), ['a1', 'old']);
    assert.deepEqual(await keys('--label', 'legacy'), ['old']);
    const empty = await t.run('task', 'list', '--label', 'legacy', '--state', 'open');
    assert.deepEqual([empty.code, empty.stdout], [0, 'no tasks\n'], 'a known label, nothing left: no tasks');
    const before = await t.counts();
    const line = assertOneErrorLine(await t.run('task', 'list', '--label', 'nope'), 4, 'unknown label');
    assert.equal(line, 'baton: label nope not found — known labels: legacy, ui');
    const refused = await t.json(4, 'task', 'list', '--label', 'nope');
    assert.deepEqual([refused['error'], refused['message']], ['not_found', 'label nope not found']);
    assert.deepEqual(await t.counts(), before, 'nothing written');
  });

  test('refuses a --project no task has and no one registered with exit 4; a known one may be empty', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'a1', '--project', 'web');
    await t.json(0, 'task', 'add', 'a2', '--project', 'api');
    await t.json(0, 'close', 'a2', '--done');
    const empty = await t.run('task', 'list', '--project', 'api', '--state', 'open');
    assert.deepEqual(
      [empty.code, empty.stdout],
      [0, 'no tasks\n'],
      'a known project, nothing left: no tasks',
    );
    const before = await t.counts();
    const line = assertOneErrorLine(await t.run('task', 'list', '--project', 'nope'), 4, 'unknown project');
    assert.equal(line, 'baton: project nope not found — known projects: api, web');
    const refused = await t.json(4, 'task', 'list', '--project', 'nope');
    assert.deepEqual([refused['error'], refused['message']], ['not_found', 'project nope not found']);
    assert.deepEqual(await t.counts(), before, 'nothing written');
  });

  test('keeps --ram-mb 0 as no budget, as a budget left out: in the queue, the job and its JSON', async () => {
    const t = await setup();
    type Enqueued = { job: { id: number; ramMb: number | null } };
    const zero = await t.json<Enqueued>(0, 'enqueue', 'zero', '--ram-mb', '0');
    const none = await t.json<Enqueued>(0, 'enqueue', 'none');
    const some = await t.json<Enqueued>(0, 'enqueue', 'some', '--ram-mb', '512');
    assert.deepEqual([zero.job.ramMb, none.job.ramMb, some.job.ramMb], [null, null, 512]);
    const listed = await t.run('queue', 'list');
    const header = listed.stdout.split('\n')[0]?.split(/ {2,}/) ?? [];
    const ramOf = (key: string): string | undefined =>
      listed.stdout
        .split('\n')
        .map((line) => line.split(/ {2,}/))
        .find((cells) => cells[1] === key)?.[header.indexOf('RAM_MB')];
    assert.deepEqual([ramOf('zero'), ramOf('none'), ramOf('some')], ['-', '-', '512'], listed.stdout);
    assert.match((await t.run('job', 'show', String(zero.job.id))).stdout, /  ram no budget$/m);
    assert.match((await t.run('job', 'show', String(some.job.id))).stdout, /  ram 512 MB$/m);
  });

  test('says every field task set changed, and changes nothing when one of them is refused', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k', '--title', 'Old');
    const titled = await t.run('task', 'set', 'k', '--title', 'New title');
    assert.deepEqual([titled.code, titled.stdout], [0, 'k title = New title\n'], titled.stderr);
    const url = 'https://example.com/1';
    const more = await t.run(
      'task',
      'set',
      'k',
      '--url',
      url,
      '--review',
      'required',
      '--requires-filesystem',
    );
    assert.equal(
      more.stdout,
      `k url = ${url}\nk review = required\nk requires the filesystem, workspace -\n`,
      more.stderr,
    );
    const body = await t.json(0, 'task', 'set', 'k', '--body', 'Longer');
    assert.deepEqual(body, { key: 'k', requiresFilesystem: true, workspace: null, body: 'Longer' });
    assert.equal((await t.run('task', 'set', 'k')).stdout, 'k requires the filesystem, workspace -\n');
    const before = await t.count('audit');
    assert.equal((await t.run('task', 'set', 'k', '--title', 'Lost', '--workspace', 'nope')).code, 4);
    const refused = await t.run('task', 'set', 'k', '--no-requires-filesystem', '--review', 'maybe');
    assertOneErrorLine(refused, 2, 'a bad --review');
    const shown = await t.json<{ task: { title: string } }>(0, 'task', 'show', 'k');
    assert.equal(shown.task.title, 'New title');
    assert.equal((await t.json(0, 'task', 'set', 'k'))['requiresFilesystem'], true);
    assert.equal(await t.count('audit'), before, 'nothing written');
  });

  test('prints no line ending in blanks: next for a task without a title, or a title ending in spaces', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'untitled', '--priority', '1');
    await t.json(0, 'task', 'add', 'spaced', '--title', 'Fix it  ', '--priority', '2');
    const first = await t.run('next');
    const second = await t.run('next');
    assert.match(first.stdout, /^untitled\n/);
    assert.match(second.stdout, /^spaced {2}Fix it\n/);
    for (const run of [first, second, await t.run('task', 'show', 'spaced'), await t.run('task', 'list')]) {
      assert.equal(run.code, 0, run.stderr);
      for (const line of run.stdout.split('\n')) assert.doesNotMatch(line, /\s$/, JSON.stringify(line));
    }
  });
});
