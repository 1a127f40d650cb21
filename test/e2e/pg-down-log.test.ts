/**
 * PostgreSQL down under a running `baton up`: its runner logged `runner: cannot use PostgreSQL …
 * connection refused` on every poll, 10 lines in 4 s. It now logs the first, at most one a 30 s
 * after (daemon/failure-log.ts, whose unit test covers the count), and one when it works again. A
 * real `baton up` on a real PostgreSQL, reached through a TCP relay this test closes, so that its
 * connections are refused as by a stopped server, and opens again on the same port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { server, upBehindRelay } from '../support/pg-relay.js';
import { waitUntil } from '../support/wait.js';

const skip = server === undefined ? 'no PostgreSQL server' : false;

/**
 * Waits until `baton up`'s loops run: for its `containment:` line, not `joined as session`. The
 * joined line comes before the host's containment is written; an outage begun in between fails
 * that first join, which `baton up` does not retry (it exits, saying why), and the runner whose
 * line a test then waits for never started. Under load that step took long enough for the relay to
 * close inside it (docs/decisions/0042). After the containment line nothing yields before the loops
 * start (daemon/up.ts, joinWith).
 */
async function untilRunning(out: () => string): Promise<void> {
  await waitUntil(() => /joined as session[^]* containment: /.test(out()), 20_000, 'baton up to run').catch(
    (error: unknown) => assert.fail(`${String(error)}:\n${out()}`),
  );
}

test(
  'baton up with PostgreSQL refusing: one runner line, not one a poll, and one when it works again',
  { skip },
  async () => {
    // A long --stale-after: the runner keeps trusting itself through the outage instead of fencing.
    const up = await upBehindRelay(['--no-http', '--stale-after', '60s']);
    const runnerLines = (): string[] => up.lines(/ runner: /);
    try {
      await untilRunning(up.out);
      await up.relay.down();
      await waitUntil(() => runnerLines().length > 0, 30_000, 'the runner to say the database is down').catch(
        (error: unknown) => assert.fail(`${String(error)}:\n${up.out()}`),
      );
      // 6 s down: the runner's heartbeat (2 s) and poll (0.5 s) fail about 15 times.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      const down = runnerLines();
      assert.equal(down.length, 1, down.join('\n'));
      assert.match(down[0] ?? '', /runner: cannot use PostgreSQL at /);
      // The leader's loops on this host fail with it, its lease renewals (each second or so) and
      // its dispatcher's ticks (each poll): a line each at most, not a line a round.
      const leaderLoops = [/ lease renewal failed: /, / dispatch failed: /];
      const failing = leaderLoops.filter((pattern) => up.lines(pattern).length > 0);
      assert.ok(failing.length > 0, `the leader's loops fail too:\n${up.out()}`);
      for (const pattern of leaderLoops) assert.ok(up.lines(pattern).length <= 1, up.out());
      await up.relay.up();
      await waitUntil(
        () => /runner: works again after /.test(up.out()),
        30_000,
        'the runner to say it works again',
      );
      assert.equal(runnerLines().length, 2, runnerLines().join('\n'));
      for (const pattern of failing) {
        const works = new RegExp(`${pattern.source.replace(/: $/, '')}: works again after `);
        await waitUntil(() => works.test(up.out()), 30_000, `${works.source}:\n${up.out()}`);
      }
      assert.match(
        runnerLines()[1] ?? '',
        /runner: works again after \d+\.\d s of failures; \d+ more failure\(s\)/,
      );
    } finally {
      await up.stop();
    }
  },
);

test(
  'an outage past the trust window: the runner is fenced, and its rejoin retries are one line, not one a retry',
  { skip },
  async () => {
    // A short trust window (3 s) and retries every second: 6 s more down is several failed rejoins.
    const up = await upBehindRelay([
      '--no-http',
      '--heartbeat-interval',
      '500ms',
      '--stale-after',
      '3s',
      '--retry-interval',
      '1s',
    ]);
    const rejoinLines = (): string[] => up.lines(/cannot rejoin yet/);
    try {
      await untilRunning(up.out);
      await up.relay.down();
      await waitUntil(
        () => rejoinLines().length > 0,
        30_000,
        `the runner to be fenced and retry:\n${up.out()}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      assert.equal(rejoinLines().length, 1, up.out());
      await up.relay.up();
      await waitUntil(
        () => (up.out().match(/joined as session/g) ?? []).length === 2,
        30_000,
        `a rejoin:\n${up.out()}`,
      );
    } finally {
      await up.stop();
    }
  },
);
