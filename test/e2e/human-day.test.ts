/**
 * The human's day with real processes on both engines: a human session keeps its claim for hours
 * beside a leading `baton up` with default settings, and with no `baton up` a dead human's claim
 * is taken over by the next claim; an agent escalates under `baton up`; gates and reviews hold
 * work until a human decides. Time is moved with the shared test clock, never slept through: every
 * process here (`baton up`, each CLI call, the test's own store) reads it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines, type TestDatabase } from '../support/databases.js';
import { SHARED_CLOCK_ENV, moveClockOf } from '../support/clock.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, clusterFixture, type ClusterFixture } from './cluster-support.js';

// Before any store opens: this file's processes (and the ones they spawn) share the moved clock.
Object.assign(process.env, SHARED_CLOCK_ENV);

const MINUTE = 60_000;
/** `baton up`'s documented defaults, written out so they win over the fixture's fast timings. */
const DEFAULTS = [
  '--lease-ttl',
  '15',
  '--retry-interval',
  '2',
  '--heartbeat-interval',
  '2',
  '--stale-after',
  '10',
];
const BATON = `node ${JSON.stringify(join(ROOT, 'bin', 'baton.js'))}`;

async function withCluster(db: TestDatabase, body: (c: ClusterFixture) => Promise<void>): Promise<void> {
  const c = await clusterFixture(db);
  try {
    await body(c);
  } finally {
    await c.close();
  }
}

/** Runs `baton … --json`, asserts the exit code, returns the parsed answer. */
async function json<T = Record<string, unknown>>(
  c: ClusterFixture,
  code: number,
  ...args: string[]
): Promise<T> {
  const r = await c.baton(...args, '--json');
  assert.equal(r.code, code, `baton ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

async function jobOf(c: ClusterFixture, key: string) {
  const [job] = await c.store.jobs.list({ key });
  assert.ok(job !== undefined, `a job for ${key}`);
  return job;
}

for (const db of bothEngines()) {
  describe(`${db.name}: the human's day`, () => {
    test('a human heartbeating every 30 minutes keeps its claim for hours while baton up leads with default settings', () =>
      withCluster(db, async (c) => {
        const move = (ms: number) => moveClockOf(db, c.url, ms);
        await json(c, 0, 'task', 'add', 'mine', '--title', 'a human works on it');
        const human = String((await json(c, 0, 'session', 'start', '--kind', 'human'))['id']);
        assert.equal((await json(c, 0, 'claim', 'mine', '--session', human))['epoch'], 1);
        const up = c.up('a', ...DEFAULTS);
        await up.waitForLog(/leading the dispatcher/);
        for (let half = 1; half <= 4; half++) {
          // A silent agent beside the human: recovery rescues it, proving a sweep ran meanwhile.
          await json(c, 0, 'task', 'add', `agent-${half}`);
          const agent = String((await json(c, 0, 'session', 'start'))['id']);
          await json(c, 0, 'claim', `agent-${half}`, '--session', agent);
          await move(30 * MINUTE);
          await waitUntil(
            async () => (await c.store.sessions.get(Number(agent)))?.state === 'stale',
            30_000,
            `the silent agent ${agent} to be rescued after ${half * 30} minutes:\n${up.log()}`,
          );
          assert.equal((await c.baton('heartbeat', human)).code, 0, 'the human beats every half hour');
          const beat = await c.baton('heartbeat', human, '--key', 'mine', '--epoch', '1');
          assert.equal(beat.code, 0, `the claim is held after ${half * 30} minutes: ${beat.stderr}`);
        }
        const claim = await c.store.claims.current('mine');
        assert.equal(claim?.session, Number(human));
        assert.equal((await c.store.sessions.get(Number(human)))?.state, 'live');
        const rescued = await c.store.audit.list({ type: 'session:stale', limit: 1000 });
        assert.ok(rescued.length >= 4, 'the leader swept all along');
        assert.ok(!rescued.some((e) => e.session === Number(human)), 'never the human');
      }));

    test('with no baton up, a dead human session past its TTL loses its claim to the next claim, fenced', () =>
      withCluster(db, async (c) => {
        await json(c, 0, 'task', 'add', 'k');
        const gone = String((await json(c, 0, 'session', 'start', '--kind', 'human', '--ttl', '2h'))['id']);
        await json(c, 0, 'claim', 'k', '--session', gone);
        const next = String((await json(c, 0, 'session', 'start', '--kind', 'human'))['id']);
        assert.equal((await json(c, 3, 'claim', 'k', '--session', next))['error'], 'held');
        await moveClockOf(db, c.url, 2 * 60 * MINUTE + MINUTE);
        const taken = await json(c, 0, 'claim', 'k', '--session', next);
        assert.deepEqual([taken['epoch'], taken['granted']], [2, true]);
        const fenced = await json(c, 3, 'heartbeat', gone, '--key', 'k', '--epoch', '1');
        assert.equal(fenced['error'], 'fenced');
        assert.equal(
          (await json(c, 3, 'release', 'k', '--session', gone, '--epoch', '1'))['error'],
          'fenced',
        );
        const [old] = await c.store.claims.history('k');
        assert.equal(old?.outcome, 'expired');
      }));

    test('an agent under baton up escalates: the job ends escalated, the task waits in escalations until resolved', () =>
      withCluster(db, async (c) => {
        const escalate = `${BATON} escalate "$BATON_KEY" --reason "needs a production key" --session "$BATON_SESSION" --epoch "$BATON_EPOCH"`;
        // The second run writes what it was told: the resolve note, as BATON_FEEDBACK (decision 0062).
        const told = `printf '%s: %s' "$BATON_FEEDBACK_FROM" "$BATON_FEEDBACK" > "feedback-$BATON_JOB"`;
        const agent = `if [ -e "escalated-$BATON_KEY" ]; then ${told}; else touch "escalated-$BATON_KEY"; ${escalate}; sleep 30; fi`;
        await json(c, 0, 'task', 'add', 'esc', '--title', 'rotate the credentials');
        await json(c, 0, 'enqueue', 'esc', '--command', agent);
        // Agents get the database URL without its password; on PostgreSQL they need it passed on.
        const password = c.url.startsWith('postgres') ? new URL(c.url).password : '';
        const up = c.upWithEnv({ PGPASSWORD: password }, 'a', '--agent-env', 'PGPASSWORD');
        await waitUntil(
          async () => (await jobOf(c, 'esc')).status === 'escalated',
          30_000,
          'the job to end escalated',
        );
        const queue = await json<Record<string, unknown>[]>(c, 0, 'escalations');
        assert.deepEqual(
          queue.map((t) => [t['key'], t['stateReason']]),
          [['esc', 'needs a production key']],
        );
        assert.equal((await c.store.claims.history('esc'))[0]?.outcome, 'escalated');
        await up.waitForLog(/job \d+ esc: escalated to a human|already escalated/);
        assert.equal((await json(c, 3, 'enqueue', 'esc'))['error'], 'task_escalated');
        await up.waitForLog(/leading the dispatcher/);
        assert.equal((await c.store.jobs.list({ key: 'esc' })).length, 1, 'no further run was placed');
        await json(c, 0, 'resolve', 'esc', '--note', 'key added to the vault');
        const shown = await c.baton('task', 'show', 'esc');
        assert.match(shown.stdout, /feedback for the next run \(escalation\): key added to the vault/);
        const again = await json<{ job: { id: number } }>(c, 0, 'enqueue', 'esc', '--command', agent);
        await waitUntil(
          async () => (await c.store.tasks.get('esc'))?.state === 'done',
          30_000,
          'the second run',
        );
        const heard = readFileSync(join(c.dir, `feedback-${again.job.id}`), 'utf8');
        assert.equal(heard, 'escalation: key added to the vault', 'the next run read the answer');
        assert.deepEqual(await json(c, 0, 'escalations'), []);
      }));

    test('a gated task is not placed until its design is approved; a reviewed one waits in review, reject reopens it, approve finishes it', () =>
      withCluster(db, async (c) => {
        const run =
          'printf %s "$BATON_FEEDBACK" > "feedback-$BATON_ATTEMPT-$BATON_JOB"; ' +
          'printf %s "$BATON_FEEDBACK_FROM" > "from-$BATON_JOB"';
        await json(c, 0, 'task', 'add', 'gated', '--title', 'redesign the cache');
        await json(c, 0, 'gate', 'gated', 'design');
        await json(c, 0, 'enqueue', 'gated', '--command', 'true');
        await json(c, 0, 'task', 'add', 'reviewed', '--review', 'required');
        await json(c, 0, 'enqueue', 'reviewed', '--command', run);
        const up = c.up('a');
        await up.waitForLog(/gated: waiting for design approval/);
        await waitUntil(
          async () => (await c.store.tasks.get('reviewed'))?.state === 'in_review',
          30_000,
          'review',
        );
        const gated = await jobOf(c, 'gated');
        assert.deepEqual([gated.status, gated.reason], ['queued', 'waiting for design approval']);
        assert.match((await c.baton('queue', 'list')).stdout, /waiting for design approval/);
        const placed = await c.store.audit.list({ key: 'gated', type: 'job:placed' });
        assert.deepEqual(placed, [], 'the gated job was never placed');
        await json(c, 0, 'reject', 'reviewed', '--reason', 'add a regression test');
        const again = await json(c, 0, 'enqueue', 'reviewed', '--command', run);
        await json(c, 0, 'approve', 'gated', '--gate', 'design', '--note', 'the plan is sound');
        await waitUntil(async () => (await jobOf(c, 'gated')).status === 'done', 30_000, 'the approved job');
        await waitUntil(
          async () => (await c.store.tasks.get('reviewed'))?.state === 'in_review',
          30_000,
          'review',
        );
        const job = (again['job'] as { id: number }).id;
        const feedback = readFileSync(join(c.dir, `feedback-1-${job}`), 'utf8');
        assert.equal(feedback, 'add a regression test', 'the next run read the rejection');
        assert.equal(readFileSync(join(c.dir, `from-${job}`), 'utf8'), 'review');
        assert.equal((await json(c, 0, 'approve', 'reviewed', '--gate', 'review'))['state'], 'done');
        const show = await json<{ history: { action: string | null; type: string }[] }>(
          c,
          0,
          'task',
          'show',
          'reviewed',
        );
        assert.deepEqual(
          show.history.map((e) => e.action),
          ['finish', 'reject', 'finish', 'approve'],
        );
        const gates = await c.store.audit.list({ key: 'gated', type: 'task:approved' });
        assert.match(String(gates[0]?.detail['by']), /@/, 'audited with who approved it');
      }));
  });
}
