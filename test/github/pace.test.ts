/**
 * Writes to GitHub are paced as octokit paces them (one at a time, a second apart, three seconds
 * between comments), and BATON_GITHUB_WRITE_PACE_MS, the tests' hook, only scales that second
 * (src/github/pace.ts). The gaps are measured where the stand-in answers the writes; only lower
 * bounds are asserted, with room for one answer coming later than the next (unpaced, they are a
 * few ms apart), which a slow machine cannot break.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRepo } from '../../src/core/github.js';
import { openBacklog } from '../../src/github/backlog.js';
import { openStore } from '../../src/store/open.js';
import { sqliteDatabase } from '../support/databases.js';
import { GithubStandIn } from '../support/github-standin.js';
import { REPO, TOKEN } from './fixture.js';

/** When the stand-in answered each write (label or comment), in order. */
async function writeTimes(
  extraEnv: Record<string, string>,
  writes: (api: ReturnType<typeof openBacklog>['deps']['api']) => Promise<void>,
): Promise<{ route: string; at: number }[]> {
  const store = await openStore(await sqliteDatabase().fresh());
  const seen: { route: string; at: number }[] = [];
  const gh = new GithubStandIn(REPO, (r) => {
    if (r.method !== 'GET') seen.push({ route: r.route, at: Date.now() });
  });
  try {
    gh.add(1);
    const env = { GITHUB_TOKEN: TOKEN, GITHUB_API_URL: await gh.start(), ...extraEnv };
    const backlog = openBacklog({ store, repo: parseRepo(REPO), env, log: () => undefined });
    await writes(backlog.deps.api);
    return seen;
  } finally {
    await gh.stop();
    await store.close();
  }
}

const gaps = (times: readonly { at: number }[]): number[] =>
  times.slice(1).map((t, i) => t.at - (times[i]?.at ?? 0));

test('by default two label writes reach GitHub at least a second apart, as octokit paces them', async () => {
  const repo = parseRepo(REPO);
  const times = await writeTimes({}, async (api) => {
    await api.addLabels(repo, 1, ['a']);
    await api.addLabels(repo, 1, ['b']);
  });
  assert.equal(times.length, 2);
  const [gap] = gaps(times);
  assert.ok((gap ?? 0) >= 800, `the second write came ${gap} ms after the first`);
});

test('BATON_GITHUB_WRITE_PACE_MS scales the pacing: writes that far apart, comments three times that', async () => {
  const repo = parseRepo(REPO);
  const times = await writeTimes({ BATON_GITHUB_WRITE_PACE_MS: '300' }, async (api) => {
    await api.addLabels(repo, 1, ['a']);
    await api.addLabels(repo, 1, ['b']);
    await api.comment(repo, 1, 'one');
    await api.comment(repo, 1, 'two');
  });
  assert.deepEqual(
    times.map((t) => t.route.split('/').pop()),
    ['labels', 'labels', 'comments', 'comments'],
  );
  const [labels, , comments] = gaps(times);
  assert.ok((labels ?? 0) >= 200, `labels ${labels} ms apart`);
  assert.ok((comments ?? 0) >= 700, `comments ${comments} ms apart`);
});
