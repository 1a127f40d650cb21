/**
 * End-to-end tests of the `baton` command: each case spawns the compiled CLI (bin/baton.js)
 * against a fresh database of its own, on SQLite and, when the test runner provides servers, on
 * PostgreSQL. They pin the contract scripts rely on: exit codes, one-line errors, JSON shapes.
 * Here tasks, sessions, claims, the queue, the audit ledger and the leader; refusals, help and
 * the choice of database are in cli-errors.test.ts.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { stopServers } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli, ISO, type Obj } from '../../test/support/cli-suite.js';

after(stopServers);

describeCli('baton CLI', ({ mode, setup }) => {
  test('adds a task and shows it as JSON with ISO times, its holder and its jobs', async () => {
    const t = await setup();
    const key = 'github:acme/api#1246';
    const added = await t.json(
      0,
      'task',
      'add',
      key,
      '--title',
      'Fix login',
      '--priority',
      '7',
      '--project',
      'api',
      '--assignee',
      'ada',
      '--label',
      'bug',
      '--label',
      'auth',
    );
    assert.equal(added['key'], key);
    assert.equal(added['priority'], 7);
    assert.deepEqual(added['labels'], ['auth', 'bug']);
    assert.match(String(added['createdAt']), ISO);
    const s = await t.session('--host', 'build-3');
    const epoch = await t.claim(key, s);
    await t.json(0, 'enqueue', key);
    const shown = await t.json<{ task: Obj; holder: Obj; jobs: [] }>(0, 'task', 'show', key);
    assert.equal(shown.task['key'], key);
    const { since, ...holder } = shown.holder;
    assert.deepEqual(holder, { session: Number(s), host: 'build-3', epoch: Number(epoch) });
    assert.match(String(since), ISO);
    assert.equal(shown.jobs.length, 1);
    const plain = await t.run('task', 'show', key);
    assert.match(plain.stdout, new RegExp(`claimed by session ${s} on build-3 since `));
    assert.equal(await t.count('task', 'list', '--project', 'api'), 1);
    // A known project with nothing left in the filter: an empty list (a project no task has is exit 4).
    assert.equal(await t.count('task', 'list', '--project', 'api', '--state', 'done'), 0);
  });

  test('starts a session and prints only its id, or the session object with --json', async () => {
    const t = await setup();
    await t.session();
    const started = await t.json(0, 'session', 'start', '--kind', 'human', '--host', 'h1', '--name', 'ada');
    assert.equal(started['kind'], 'human');
    assert.equal(started['host'], 'h1');
    assert.equal(started['name'], 'ada');
    assert.equal(started['state'], 'live');
    // The CLI exits at once, so the session's pid is its caller's: here, this test process.
    assert.equal(started['pid'], process.pid);
    assert.match(String(started['startedAt']), ISO);
    assert.equal((await t.json(0, 'session', 'start', '--pid', '4242'))['pid'], 4242);
  });

  test('grants a claim with its epoch, and the same epoch when the same session claims again', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const s = await t.session();
    const first = await t.run('claim', 'k1', '--session', s);
    assert.equal(first.code, 0);
    assert.equal(first.stdout, `claimed k1 epoch 1 (session ${s})\n`);
    const again = await t.json(0, 'claim', 'k1', '--session', s);
    assert.equal(again['key'], 'k1');
    assert.equal(again['session'], Number(s));
    assert.equal(again['epoch'], 1);
    assert.equal(again['granted'], false);
    assert.match(String(again['claimedAt']), ISO);
  });

  test('refuses a claim held by another session with exit 3, naming session, host and since', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const holder = await t.session('--host', 'build-7');
    const other = await t.session('--host', 'laptop');
    const granted = await t.json(0, 'claim', 'k1', '--session', holder);
    assert.equal(granted['granted'], true);
    const line = assertOneErrorLine(await t.run('claim', 'k1', '--session', other), 3, 'held');
    assert.match(line, new RegExp(`session ${holder} on build-7 since \\d{4}-\\d\\d-\\d\\dT`));
    const refused = await t.json<{ holder: Obj } & Obj>(3, 'claim', 'k1', '--session', other);
    assert.equal(refused['error'], 'held');
    assert.equal(typeof refused['message'], 'string');
    assert.deepEqual(refused.holder, {
      session: Number(holder),
      host: 'build-7',
      since: granted['claimedAt'],
      epoch: 1,
    });
  });

  test('exits 3 from a heartbeat once its claim was released and re-claimed by another session', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const a = await t.session();
    const b = await t.session('--host', 'other-host');
    const epoch = await t.claim('k1', a);
    const beat = ['heartbeat', a, '--key', 'k1', '--epoch', epoch];
    assert.equal((await t.run(...beat)).code, 0);
    assert.equal((await t.run('heartbeat', a)).code, 0);
    assert.equal((await t.run('release', 'k1', '--session', a, '--epoch', epoch)).code, 0);
    const newEpoch = await t.claim('k1', b);
    assert.equal(Number(newEpoch), Number(epoch) + 1);
    const line = assertOneErrorLine(await t.run(...beat), 3, 'fenced heartbeat');
    assert.match(line, new RegExp(`now held by session ${b} on other-host`));
    const fenced = await t.json<{ current: Obj } & Obj>(3, ...beat);
    assert.equal(fenced['error'], 'fenced');
    assert.deepEqual([fenced.current['session'], fenced.current['epoch']], [Number(b), Number(newEpoch)]);
  });

  test('refuses a release with an old epoch with exit 3 and keeps the current claim', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const a = await t.session();
    const b = await t.session();
    const old = await t.claim('k1', a);
    await t.json(0, 'release', 'k1', '--session', a, '--epoch', old, '--outcome', 'failed');
    const current = await t.claim('k1', b);
    const stale = await t.run('release', 'k1', '--session', a, '--epoch', old);
    assertOneErrorLine(stale, 3, 'stale release');
    const shown = await t.json<{ holder: Obj }>(0, 'task', 'show', 'k1');
    assert.deepEqual([shown.holder['session'], shown.holder['epoch']], [Number(b), Number(current)]);
    const released = await t.json(
      0,
      'release',
      'k1',
      '--session',
      b,
      '--epoch',
      current,
      '--outcome',
      'done',
    );
    const expected = { key: 'k1', session: Number(b), epoch: Number(current), outcome: 'done' };
    assert.deepEqual(released, expected);
  });

  test('ends a session, releasing its claims, and refuses it further claims with exit 3', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    const s = await t.session();
    await t.claim('k1', s);
    const ended = await t.json(0, 'session', 'end', s);
    assert.equal(ended['state'], 'ended');
    assert.equal(ended['ended'], true);
    assert.equal((await t.json(0, 'task', 'show', 'k1'))['holder'], null);
    assertOneErrorLine(await t.run('claim', 'k1', '--session', s), 3, 'claim by ended session');
  });

  test('queues a job, reports the active one instead of a second, lists, shows and cancels it', async () => {
    const t = await setup();
    const queued = await t.json<{ created: boolean; job: Obj }>(
      0,
      'enqueue',
      'new-task',
      '--priority',
      '5',
      '--ram-mb',
      '512',
      '--command',
      'npm test',
      '--attempts',
      '2',
    );
    assert.equal(queued.created, true);
    assert.equal(queued.job['status'], 'queued');
    const id = String(queued.job['id']);
    const again = await t.run('enqueue', 'new-task');
    assert.equal(again.code, 0);
    assert.match(again.stdout, new RegExp(`already has an active job.*job ${id} queued`));
    const jobs = await t.json<Obj[]>(0, 'queue', 'list', '--status', 'queued');
    assert.equal(jobs.length, 1);
    const fields = ['id', 'key', 'status', 'host', 'attempt', 'epoch', 'priority', 'ramMb'];
    for (const field of [...fields, 'reason']) {
      assert.ok(field in (jobs[0] ?? {}), `queue list --json lacks ${field}`);
    }
    assert.equal(jobs[0]?.['ramMb'], 512);
    assert.match((await t.run('queue', 'list')).stdout, /^ID\s+KEY\s+STATUS/);
    const job = await t.json(0, 'job', 'show', id);
    assert.equal(job['command'], 'npm test');
    assert.equal(job['attemptMax'], 2);
    assert.match(String(job['queuedAt']), ISO);
    assert.equal((await t.json(0, 'cancel', id))['status'], 'cancelled');
    assert.equal((await t.json(3, 'cancel', id))['error'], 'conflict');
    const [cancelled] = await t.json<Obj[]>(0, 'audit', '--job', id, '--type', 'job:cancelled');
    const who = (cancelled?.['detail'] as Obj | undefined)?.['by'];
    // With --db the operating-system user at this host; over HTTP the token that asked.
    const actor = mode === 'db' ? /^.+@.+$/ : /^token [0-9a-f]{12}$/;
    assert.match(String(who), actor, 'the ledger names who cancelled');
    assert.equal(await t.count('queue', 'list', '--status', 'queued'), 0);
  });

  test('filters the audit ledger by task, session and job', async () => {
    const t = await setup();
    await t.json(0, 'task', 'add', 'k1');
    await t.json(0, 'task', 'add', 'k2');
    const s = await t.session();
    await t.claim('k1', s);
    const { job } = await t.json<{ job: Obj }>(0, 'enqueue', 'k2');
    const types = async (...args: string[]): Promise<unknown[]> =>
      (await t.json<Obj[]>(0, 'audit', ...args)).map((e) => e['type']);
    assert.deepEqual(await types('--task', 'k1'), ['task:added', 'claim:granted']);
    assert.deepEqual(await types('--session', s), ['session:started', 'claim:granted']);
    assert.deepEqual(await types('--job', String(job['id'])), ['job:enqueued']);
    assert.equal((await types('--limit', '2')).length, 2);
    const [first] = await t.json<Obj[]>(0, 'audit', '--limit', '1');
    assert.match(String(first?.['at']), ISO);
  });

  test('says there is no dispatcher leader on a fresh database', async () => {
    const t = await setup();
    const expected = {
      session: null,
      host: null,
      pid: null,
      term: null,
      expiresAt: null,
      expiresInMs: null,
      current: false,
    };
    assert.deepEqual(await t.json(0, 'leader'), expected);
    assert.match((await t.run('leader')).stdout, /^no dispatcher leader/);
  });
});
