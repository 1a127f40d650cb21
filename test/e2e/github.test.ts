/**
 * The GitHub backlog end to end, with real processes: `baton github sync` and a real
 * `baton up --github acme/api` against the GitHub stand-in (GITHUB_API_URL), every response of
 * which is checked against GitHub's OpenAPI description.
 *  - an issue closed on GitHub while its job is queued: the runner's re-check cancels the job and
 *    nothing runs (the sync is kept from seeing it: the stand-in's issue list is down);
 *  - enqueue, claim and finish show ai-dev-queued, then WIP, then no label;
 *  - an agent escalates from inside its run: human-action appears, `baton resolve` removes it;
 *  - SIGTERM while the sync waits out a spent rate limit (its reset ten days away): `baton up`
 *    exits 0 (under the test's timeout, not a clock), its host drained, as an idle stop.
 * No output of any process carries the token.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { GithubStandIn } from '../support/github-standin.js';
import { OpenApiChecker } from '../support/github-openapi.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, ROOT, type ClusterFixture } from './cluster-support.js';

const BIN = join(ROOT, 'bin', 'baton.js');
const TOKEN = 'ghp_e2eStandInToken9876543210SECRET';
const REPO = 'acme/api';
const key = (n: number): string => `github:${REPO}#${n}`;
const MANAGED = ['WIP', 'ai-dev-queued', 'human-action'];

async function withBacklog(
  db: Parameters<typeof clusterFixture>[0],
  body: (c: ClusterFixture, gh: GithubStandIn, env: Record<string, string>) => Promise<void>,
): Promise<void> {
  const checker = new OpenApiChecker().warm();
  const gh = new GithubStandIn(REPO, (r) => void checker.check(r));
  const env = {
    GITHUB_TOKEN: TOKEN,
    GITHUB_API_URL: await gh.start(),
    BATON_GITHUB_TIMEOUT_MS: '2000',
    BATON_GITHUB_RETRY_BASE_MS: '50',
    BATON_GITHUB_WRITE_PACE_MS: '50',
  };
  const saved = { ...process.env };
  Object.assign(process.env, env); // the fixture's `baton` commands inherit it
  const c = await clusterFixture(db);
  try {
    await body(c, gh, env);
    assert.deepEqual(checker.failures, [], 'every response matches GitHub OpenAPI description');
    for (const name of readdirSync(c.dir).filter((n) => n.endsWith('.log'))) {
      assert.ok(!readFileSync(join(c.dir, name), 'utf8').includes(TOKEN), `no token in ${name}`);
    }
    assert.ok(!JSON.stringify(await c.store.audit.list({ limit: 10_000 })).includes(TOKEN));
  } finally {
    await c.close();
    await gh.stop();
    process.env = saved;
  }
}

const managed = (gh: GithubStandIn, n: number): string[] => gh.labels(n).filter((l) => MANAGED.includes(l));

for (const db of bothEngines()) {
  describe(`baton up --github against the stand-in (${db.name})`, () => {
    test("the runner's re-check cancels the queued job of an issue closed on GitHub, and nothing runs", () =>
      withBacklog(db, async (c, gh) => {
        gh.add(1);
        const sync = await c.baton('github', 'sync', REPO, '--json');
        assert.equal(sync.code, 0, sync.stderr);
        assert.equal((JSON.parse(sync.stdout) as { added: number }).added, 1);
        assert.ok(!sync.stdout.includes(TOKEN) && !sync.stderr.includes(TOKEN));
        await c.baton('enqueue', key(1), '--command', 'touch ran-1');
        gh.close(1);
        gh.listDown = '500'; // the leader's sync cannot see the close: only the re-check can
        const up = c.up('h1', '--github', REPO);
        await waitUntil(
          async () => (await c.store.jobs.list({ key: key(1) }))[0]?.status === 'cancelled',
          30_000,
          'the re-check to cancel the job',
        );
        const [job] = await c.store.jobs.list({ key: key(1) });
        assert.match(job?.reason ?? '', /issue closed on GitHub/);
        assert.equal(job?.startedAt ?? null, null, 'never started');
        assert.equal(existsSync(join(c.dir, 'ran-1')), false, 'nothing ran');
        assert.equal((await c.store.tasks.get(key(1)))?.state, 'closed');
        // The re-check notes its outcome after the close that cancelled the job; its log line
        // comes after the note.
        await up.waitForLog(/not run, issue closed on GitHub/);
        const rechecks = await c.store.audit.list({ key: key(1), type: 'github:recheck' });
        assert.deepEqual(
          rechecks.map((r) => r.detail['outcome']),
          ['cancelled'],
          JSON.stringify(rechecks.map((r) => r.detail)),
        );
      }));

    test('with auto-enqueue on, an issue closed whose merged-PR look-up is limited is not queued again', () =>
      withBacklog(db, async (c, gh) => {
        gh.add(1);
        assert.equal((await c.baton('github', 'sync', REPO)).code, 0);
        assert.equal((await c.baton('setting', 'set', 'auto-enqueue', 'on')).code, 0);
        // Said to lift in 2 s, again at each ask while the timeline is down: the leader's sync waits
        // and asks again, the re-check before a run does not wait (decision 0013).
        gh.rateLimit = { status: 403, liftsInS: 2 };
        gh.close(1, { mergedPr: 9 }); // closed as completed: its verdict needs the timeline
        gh.timelineDown = 'primary';
        const up = c.up('h1', '--github', REPO, '--agent-command', 'true', '--github-every', '2s');
        await up.waitForLog(/not run, issue closed on GitHub \(not settled: /);
        // Auto-enqueue's later passes (every 2 s): each queues what a task added now waits for.
        for (const n of [1, 2, 3]) {
          assert.equal((await c.baton('task', 'add', `later-${n}`)).code, 0);
          await waitUntil(
            async () => (await c.store.jobs.list({ key: `later-${n}` }))[0]?.status === 'done',
            30_000,
            `auto-enqueue to queue and run later-${n}:\n${up.log()}`,
          );
        }
        const jobs = await c.store.jobs.list({ key: key(1) });
        assert.deepEqual(
          jobs.map((job) => job.status),
          ['cancelled'],
          `one job, cancelled; not queued again:\n${up.log()}`,
        );
        assert.equal(
          (await c.store.tasks.get(key(1)))?.state,
          'open',
          'the task kept, for the sync to settle',
        );
        gh.timelineDown = null; // the limit lifts: the next sync settles it
        await waitUntil(
          async () => (await c.store.tasks.get(key(1)))?.state === 'done',
          30_000,
          `the sync to settle the task:\n${up.log()}`,
        );
        assert.equal((await c.store.jobs.list({ key: key(1) })).length, 1, 'no job after it settled');
      }));

    test('enqueue, claim and finish show ai-dev-queued, then WIP, then no label', () =>
      withBacklog(db, async (c, gh) => {
        gh.add(2, { labels: ['bug'] });
        assert.equal((await c.baton('github', 'sync', REPO)).code, 0);
        await c.baton('enqueue', key(2), '--command', 'sleep 3');
        c.up('h1', '--github', REPO, '--standby'); // leads, projects, runs nothing until enabled
        await waitUntil(() => managed(gh, 2).join() === 'ai-dev-queued', 20_000, 'ai-dev-queued');
        assert.equal((await c.baton('host', 'enable', 'h1')).code, 0);
        await waitUntil(() => managed(gh, 2).join() === 'WIP', 20_000, 'WIP while it runs');
        await waitUntil(
          async () => (await c.store.jobs.list({ key: key(2) }))[0]?.status === 'done',
          20_000,
          'the job to finish',
        );
        await waitUntil(() => managed(gh, 2).length === 0, 20_000, 'no label once done');
        const seen = (gh.history.get(2) ?? []).map((labels) =>
          labels.filter((l) => MANAGED.includes(l)).join(),
        );
        const order = ['ai-dev-queued', 'WIP', ''].map((want) => seen.indexOf(want));
        assert.ok(
          order.every((i, n) => i >= 0 && (n === 0 || i > (order[n - 1] ?? 0))),
          seen.join(' | '),
        );
        assert.deepEqual(gh.labels(2), ['bug'], "the humans' own label stays");
        assert.equal((await c.store.tasks.get(key(2)))?.state, 'done');
      }));

    test('an agent that escalates from inside its run shows human-action; baton resolve removes it', () =>
      withBacklog(db, async (c, gh) => {
        gh.add(3);
        assert.equal((await c.baton('github', 'sync', REPO)).code, 0);
        const escalate =
          `"${process.execPath}" "${BIN}" escalate "$BATON_KEY" --session "$BATON_SESSION" ` +
          `--epoch "$BATON_EPOCH" --reason "which database should the cache use?"`;
        await c.baton('enqueue', key(3), '--command', escalate);
        // Agents get the database URL without its password; on PostgreSQL they need it passed on.
        const password = c.url.startsWith('postgres') ? new URL(c.url).password : '';
        c.upWithEnv({ PGPASSWORD: password }, 'h1', '--github', REPO, '--agent-env', 'PGPASSWORD');
        await waitUntil(() => managed(gh, 3).join() === 'human-action', 30_000, 'human-action');
        await waitUntil(() => gh.comments(3).length > 0, 20_000, 'the escalation comment');
        assert.match(gh.comments(3).join('\n'), /which database should the cache use\?/);
        const resolved = await c.baton('resolve', key(3), '--note', 'use Redis');
        assert.equal(resolved.code, 0, resolved.stderr);
        await waitUntil(() => managed(gh, 3).length === 0, 20_000, 'human-action removed');
        assert.equal(gh.comments(3).length, 1, 'one comment');
      }));

    test(
      'SIGTERM while the sync waits out a spent rate limit: exit 0, the host drained',
      { timeout: 120_000 },
      () =>
        withBacklog(db, async (c, gh) => {
          gh.add(4);
          gh.rateLimit = { status: 403, liftsInS: 864_000 }; // ten days: at 50 ms a second, twelve hours
          gh.down = 'primary';
          const up = c.up('h1', '--github', REPO);
          await up.waitForLog(
            /GitHub rate limit reached on GET \/repos\/acme\/api\/issues\S*; waiting \d+ s/,
            30_000,
          );
          up.signal('SIGTERM');
          // The wait it was in ends in ten days (twelve hours here): an exit under the test's timeout
          // is the stop's; its log lines say which wait it ended.
          await up.exited();
          assert.equal(up.child.exitCode, 0, up.log());
          assert.match(
            up.log(),
            /github sync: ended by the stop: GitHub GET \/repos\/acme\/api\/issues: stopped while waiting out the primary rate limit, spent until \d{4}-/,
          );
          assert.doesNotMatch(up.log(), /github sync failed/);
          assert.match((await c.baton('hosts')).stdout, /^h1\s+drained\s/m, 'a planned stop, as an idle one');
          assert.deepEqual(await c.store.sessions.list({ liveOnly: true }), [], 'its session ended');
          assert.equal(await c.store.github.cursor(REPO), null, 'no page applied, no cursor');
          assert.equal(await c.store.tasks.get(key(4)), null);
        }),
    );
  });
}
