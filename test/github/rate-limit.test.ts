/**
 * A spent GitHub rate limit at a run's start: the re-check before a run does not wait it out (an
 * hour on GitHub, three times over with octokit's retries, while the job sat placed); it lets the
 * run go ahead on the issue's last known state at once, and says so once, with the reset, in the
 * ledger and the log. The sync still waits a short limit; when it gives up, its error names the
 * limit and its reset, and no wait is announced that is not made. A stop ends the sync's or the
 * projector's wait for a far reset at once, leaving the cursor and the outbox as they were
 * (decision 0013).
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { OpenApiChecker } from '../support/github-openapi.js';
import { GithubUnavailableError } from '../../src/core/errors.js';
import { GithubStoppedError } from '../../src/github/stop.js';
import { waitUntil } from '../support/wait.js';
import { githubFixture, key, REPO, TOKEN, type GithubFixture } from './fixture.js';

/** Ten days: waited out, even at the tests' 20 ms a second, it would hold the job for hours. */
const FAR_S = 864_000;

async function withFixture(
  db: Parameters<typeof githubFixture>[0],
  body: (f: GithubFixture) => Promise<void>,
): Promise<void> {
  const f = await githubFixture(db);
  try {
    await body(f);
    assert.deepEqual(f.checker.failures, [], 'every response matches GitHub OpenAPI description');
    assert.ok(
      f.logs.every((l) => !l.includes(TOKEN)),
      'no token in the logs',
    );
  } finally {
    await f.close();
  }
}

/** A job placed on issue #1, imported while GitHub answered. */
async function placed(f: GithubFixture): Promise<{ readonly id: number; readonly key: string }> {
  f.gh.add(1);
  await f.backlog.sync({ labels: [] });
  return (await f.store.jobs.enqueue({ key: key(1) })).job;
}

/** Rechecks the job with every request limited; returns its ledger rows and GitHub's answers. */
async function recheckLimited(f: GithubFixture, job: { readonly id: number; readonly key: string }) {
  f.gh.down = 'primary';
  const before = f.gh.sent.length;
  const verdict = await f.backlog.recheck(job);
  // Answers sent, each a rate limit (a request abandoned at the fixture's timeout is retried unanswered).
  const requests = f.gh.sent.length - before;
  f.gh.down = null;
  const rows = await f.store.audit.list({ key: key(1), type: 'github:recheck' });
  return { verdict, requests, rows };
}

const iso = (liftsInS: number, sent: number): string =>
  new Date((Math.ceil(sent / 1000) + liftsInS) * 1000).toISOString();

// GitHub's shared responses (a 403's body) are loaded on first use, for seconds: here, not while the
// stand-in answers a request the client abandons at the fixture's timeout and sends again.
before(() => {
  const body = { message: 'API rate limit exceeded', documentation_url: 'https://docs.github.com/rest' };
  new OpenApiChecker().check({
    method: 'GET',
    route: '/repos/{owner}/{repo}/issues/{issue_number}',
    status: 403,
    body,
  });
});

for (const db of bothEngines()) {
  describe(`a spent GitHub rate limit (${db.name})`, () => {
    test(
      'an issue read closed whose merged-PR look-up is limited runs no agent; the sync settles it',
      {
        timeout: 120_000,
      },
      () =>
        withFixture(db, async (f) => {
          const job = await placed(f);
          f.gh.rateLimit = { status: 403, liftsInS: FAR_S };
          f.gh.close(1, { mergedPr: 9 }); // closed as completed: its verdict needs the timeline
          f.gh.timelineDown = 'primary';
          const verdict = await f.backlog.recheck(job);
          assert.equal(verdict.go, false, JSON.stringify(verdict));
          const reason = verdict.go ? '' : verdict.reason;
          assert.match(
            reason,
            /^issue closed on GitHub \(not settled: .*rate limit.*; the next sync settles the task\)$/,
          );
          assert.equal((await f.store.tasks.get(key(1)))?.state, 'open', 'left to the sync');
          const rows = await f.store.audit.list({ key: key(1), type: 'github:recheck' });
          assert.deepEqual([rows.length, rows[0]?.detail['outcome']], [1, 'cancelled']);
          f.gh.timelineDown = null;
          await f.backlog.sync({ labels: [] });
          assert.equal((await f.store.tasks.get(key(1)))?.state, 'done', 'done by its merged pull request');
        }),
    );
    for (const status of [403, 429] as const) {
      test(
        `the re-check lets the run go at once on a primary limit (${status}), saying until when`,
        {
          timeout: 120_000,
        },
        () =>
          withFixture(db, async (f) => {
            const job = await placed(f);
            f.gh.rateLimit = { status, liftsInS: FAR_S };
            const sent = Date.now();
            const { verdict, requests, rows } = await recheckLimited(f, job);
            assert.deepEqual(verdict, { go: true, checked: false });
            assert.equal(
              requests,
              1,
              `asked once, not again after the reset: ${JSON.stringify(f.gh.sent.slice(-3))}`,
            );
            assert.equal(rows.length, 1);
            const detail = rows[0]?.detail ?? {};
            assert.equal(detail['reason'], 'rate-limited');
            assert.equal(detail['limit'], 'primary');
            assert.equal(detail['outcome'], 'run');
            const resetAt = String(detail['resetAt']);
            // The stand-in's reset is a whole second from when it answered: this second or the next.
            assert.ok([iso(FAR_S, sent), iso(FAR_S, sent + 1000)].includes(resetAt), resetAt);
            assert.match(
              String(detail['error']),
              new RegExp(`^GitHub GET /repos/acme/api/issues/1: ${status} `),
            );
            const said = f.logs.filter((l) => l.includes(`job ${job.id} `));
            assert.deepEqual(said, [
              `job ${job.id} ${key(1)}: not re-checked on GitHub: the token's primary rate limit is spent ` +
                `until ${resetAt}; running it on the issue's last known state (open)`,
            ]);
            assert.ok(!f.logs.some((l) => /waiting/.test(l)), 'no wait announced');
            assert.equal(
              (await f.store.jobs.get(job.id))?.status,
              'queued',
              'not cancelled: left for the runner to start',
            );
          }),
      );
    }

    test(
      'the re-check does not wait a long secondary limit; it waits a short one once',
      { timeout: 120_000 },
      () =>
        withFixture(db, async (f) => {
          const job = await placed(f);
          f.gh.rateLimit = { status: 403, liftsInS: 3600 };
          f.gh.faults.push('secondary');
          assert.deepEqual(await f.backlog.recheck(job), { go: true, checked: false });
          const [row] = await f.store.audit.list({ key: key(1), type: 'github:recheck' });
          assert.equal(row?.detail['limit'], 'secondary');
          assert.equal(f.gh.faults.length, 0);
          f.gh.rateLimit = { status: 403, liftsInS: 1 };
          f.gh.faults.push('secondary');
          assert.deepEqual(
            await f.backlog.recheck(job),
            { go: true, checked: true },
            'asked again after 1 s',
          );
        }),
    );

    test('the sync waits a short primary limit; past its retries the error names it and its reset', () =>
      withFixture(db, async (f) => {
        f.gh.add(1);
        f.gh.rateLimit = { status: 403, liftsInS: 1 };
        f.gh.down = 'primary';
        const error = await f.backlog.sync({ labels: [] }).then(
          () => assert.fail('the sync passed under a spent limit'),
          (e: unknown) => e,
        );
        f.gh.down = null;
        assert.ok(error instanceof GithubUnavailableError);
        assert.match(
          error.message,
          /^GitHub GET \/repos\/acme\/api\/issues: 403 API rate limit exceeded.*; the primary rate limit of this token is spent until \d{4}-\d\d-\d\dT/,
        );
        assert.match(error.hint ?? '', /^wait for the reset/);
        assert.doesNotMatch(error.hint ?? '', /GITHUB_API_URL|scopes/);
        // Three retries, three waits announced: the fourth answer is the error, not a wait.
        assert.equal(f.logs.filter((l) => /rate limit reached .*; waiting/.test(l)).length, 3);
        assert.equal((await f.backlog.sync({ labels: [] })).added, 1, 'and goes on once it lifts');
      }));

    test(
      'a stop ends the sync in its wait for a far reset; the cursor stays where the last page put it',
      { timeout: 60_000 },
      () =>
        withFixture(db, async (f) => {
          f.gh.add(1);
          await f.backlog.sync({ labels: [] });
          const cursor = await f.store.github.cursor(REPO);
          assert.notEqual(cursor, null);
          f.gh.add(2);
          f.gh.rateLimit = { status: 403, liftsInS: FAR_S };
          f.gh.down = 'primary';
          const stop = new AbortController();
          const pass = f.backlog.sync({ labels: [], signal: stop.signal }).then(
            () => assert.fail('the pass ended as if GitHub answered'),
            (e: unknown) => e,
          );
          await waitUntil(
            () => f.logs.some((l) => /rate limit reached .*; waiting \d+ s/.test(l)),
            20_000,
            'a wait',
          );
          stop.abort();
          const error = await pass;
          assert.ok(error instanceof GithubStoppedError, String(error));
          assert.match(
            error.message,
            /^GitHub GET \/repos\/acme\/api\/issues: stopped while waiting out the primary rate limit, spent until \d{4}-/,
          );
          const waits = f.logs.filter((l) => /waiting/.test(l));
          assert.equal(waits.length, 1, waits.join('\n'));
          // Waited as the throttling plugin did: a second past the reset, ten days away.
          const seconds = Number(/waiting (\d+) s$/.exec(waits[0] ?? '')?.[1]);
          assert.ok(seconds >= FAR_S && seconds <= FAR_S + 2, String(seconds));
          assert.equal(await f.store.github.cursor(REPO), cursor, 'the cursor did not move');
          assert.equal(await f.store.tasks.get(key(2)), null);
          f.gh.down = null;
          assert.equal((await f.backlog.sync({ labels: [] })).added, 1, 'the next pass reads on from it');
        }),
    );

    test(
      'a stop ends the projector in its wait; its rows stay as they were, not counted failed',
      { timeout: 60_000 },
      () =>
        withFixture(db, async (f) => {
          f.gh.add(1);
          await f.backlog.sync({ labels: [] });
          await f.store.jobs.enqueue({ key: key(1) });
          const before = await f.store.github.pending({ limit: 10 });
          assert.ok(before.length > 0);
          f.gh.rateLimit = { status: 429, liftsInS: FAR_S };
          f.gh.down = 'primary';
          const stop = new AbortController();
          const pass = f.backlog.project(stop.signal).then(
            () => assert.fail('the pass ended as if GitHub answered'),
            (e: unknown) => e,
          );
          await waitUntil(() => f.logs.some((l) => /waiting \d+ s/.test(l)), 20_000, 'a wait');
          stop.abort();
          assert.ok((await pass) instanceof GithubStoppedError);
          f.gh.down = null;
          assert.deepEqual(
            await f.store.github.pending({ limit: 10 }),
            before,
            'untouched: no attempt, no error',
          );
          assert.ok(!f.logs.some((l) => /not projected yet/.test(l)), f.logs.join('\n'));
        }),
    );
  });
}
