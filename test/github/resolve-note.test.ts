/**
 * A resolve's note reaches the GitHub issue (docs/decisions/0062, amendment "the note on GitHub"):
 * `baton resolve K --note N` (a real process) writes one outbox row in its transaction (migration
 * 0052), and the projector posts it once, N verbatim in a code block, even when the answer to its
 * first post is lost; a resolve without a note posts nothing; comments off posts nothing; a marker
 * quoted inside another comment is not the post. Both engines, against the stand-in.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRepo } from '../../src/core/github.js';
import { baton } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { drain, githubFixture, key, REPO, type GithubFixture } from './fixture.js';

const NOTE = 'use the staging database\n```sh\nrm -rf /\n```\n@octocat see #8 <!-- hidden -->';
const RESOLVED = '**Baton: resolved';

async function withFixture(
  db: Parameters<typeof githubFixture>[0],
  body: (f: GithubFixture) => Promise<void>,
  options: Parameters<typeof githubFixture>[1] = {},
): Promise<void> {
  const f = await githubFixture(db, options);
  try {
    await body(f);
    assert.deepEqual(f.checker.failures, [], 'every response matches GitHub OpenAPI description');
  } finally {
    await f.close();
  }
}

/** An imported issue whose task an agent escalated, its escalation's comment posted. */
async function escalated(f: GithubFixture, n: number): Promise<void> {
  f.gh.add(n);
  await f.backlog.sync({ labels: [] });
  const done = await f.store.lifecycle.escalate({
    key: key(n),
    reason: 'which database?',
    by: { name: 'agent' },
  });
  assert.ok(done.ok);
  await drain(f);
}

const resolvedComments = (f: GithubFixture, n: number): string[] =>
  f.gh.comments(n).filter((body) => body.startsWith(RESOLVED));

for (const db of bothEngines()) {
  describe(`a resolve note on GitHub (${db.name})`, () => {
    test('baton resolve --note ends as exactly one comment, the note verbatim, though the first answer was lost', () =>
      withFixture(db, async (f) => {
        await escalated(f, 7);
        assert.deepEqual(f.gh.labels(7), ['human-action']);
        const run = await baton(f.db, 'resolve', key(7), '--note', NOTE);
        assert.equal(run.code, 0, run.stderr);
        f.gh.late = /^POST .*\/comments$/;
        await f.backlog.project().catch(() => undefined);
        assert.equal(resolvedComments(f, 7).length, 1, 'GitHub made it; the answer never came');
        f.gh.late = null;
        await drain(f, 30_000);
        const [posted, ...more] = resolvedComments(f, 7);
        assert.deepEqual(more, [], 'the retry found it and did not post again');
        const by = (await f.store.tasks.get(key(7)))?.stateBy ?? '';
        assert.ok(by !== '');
        const fence = '````';
        assert.match(posted ?? '', /\n\n<!-- baton:outbox:\d+ -->$/);
        assert.equal(
          (posted ?? '').replace(/\n\n<!-- baton:outbox:\d+ -->$/, ''),
          `${RESOLVED} by \` ${by} \`.** The next run is given this note as its feedback:\n\n` +
            `${fence}text\n${NOTE}\n${fence}`,
        );
        assert.equal(f.gh.comments(7).length, 2, 'the escalation and the note');
        assert.deepEqual(f.gh.labels(7), [], 'human-action went');
        await f.store.lifecycle.escalate({ key: key(7), reason: 'and the schema?', by: { name: 'agent' } });
        const bare = await baton(f.db, 'resolve', key(7));
        assert.equal(bare.code, 0, bare.stderr);
        await drain(f);
        assert.equal(f.gh.comments(7).length, 3, 'the second escalation only');
        assert.equal(resolvedComments(f, 7).length, 1, 'a resolve without a note posts nothing');
      }));

    test('a marker quoted inside another comment is not the post: the note is still posted', () =>
      withFixture(db, async (f) => {
        await escalated(f, 9);
        const by = { name: 'alice@box' };
        await f.store.lifecycle.transition({ key: key(9), action: 'resolve', by, reason: 'go ahead' });
        const [row] = (await f.store.github.pending({ limit: 100, key: key(9) })).filter(
          (r) => r.kind === 'comment',
        );
        assert.ok(row !== undefined);
        const quoted = `the note of <!-- baton:outbox:${row.id} --> is coming`;
        await f.backlog.deps.api.comment(parseRepo(REPO), 9, quoted);
        await drain(f);
        assert.deepEqual(resolvedComments(f, 9), [
          `${RESOLVED} by \` alice@box \`.** The next run is given this note as its feedback:\n\n` +
            `\`\`\`text\ngo ahead\n\`\`\`\n\n<!-- baton:outbox:${row.id} -->`,
        ]);
      }));

    test("another user's comment ending with the marker is not the post: the note is still posted", () =>
      withFixture(db, async (f) => {
        await escalated(f, 12);
        const by = { name: 'alice@box' };
        await f.store.lifecycle.transition({ key: key(12), action: 'resolve', by, reason: 'go ahead' });
        const [row] = (await f.store.github.pending({ limit: 100, key: key(12) })).filter(
          (r) => r.kind === 'comment',
        );
        assert.ok(row !== undefined);
        f.gh.commenter = 'mallory';
        await f.backlog.deps.api.comment(
          parseRepo(REPO),
          12,
          `looks done\n\n<!-- baton:outbox:${row.id} -->`,
        );
        f.gh.commenter = 'octo';
        await drain(f);
        assert.equal(resolvedComments(f, 12).length, 1, 'posted by Baton, once');
        assert.equal(f.gh.sent.filter((r) => r.route === '/user').length, 1, 'GET /user asked once');
      }));

    test("with a GitHub App's token (GET /user refused), its bot's post counts and another's marker does not", () =>
      withFixture(db, async (f) => {
        f.gh.appToken = true;
        f.gh.commenter = 'baton-app[bot]';
        await escalated(f, 13);
        const by = { name: 'alice@box' };
        await f.store.lifecycle.transition({ key: key(13), action: 'resolve', by, reason: 'go ahead' });
        const [row] = (await f.store.github.pending({ limit: 100, key: key(13) })).filter(
          (r) => r.kind === 'comment',
        );
        assert.ok(row !== undefined);
        f.gh.commenter = 'mallory';
        await f.backlog.deps.api.comment(
          parseRepo(REPO),
          13,
          `looks done\n\n<!-- baton:outbox:${row.id} -->`,
        );
        f.gh.commenter = 'baton-app[bot]';
        f.gh.late = /^POST .*\/comments$/;
        await f.backlog.project().catch(() => undefined);
        f.gh.late = null;
        await drain(f, 30_000);
        assert.equal(
          resolvedComments(f, 13).length,
          1,
          "posted by the app's bot once, the lost answer's retry found it",
        );
      }));

    test('with comments off, the note is not posted and its row is marked applied', () =>
      withFixture(
        db,
        async (f) => {
          await escalated(f, 11);
          await f.store.lifecycle.transition({
            key: key(11),
            action: 'resolve',
            by: { name: 'alice@box' },
            reason: 'go ahead',
          });
          await drain(f);
          assert.deepEqual(f.gh.comments(11), []);
          assert.deepEqual(f.gh.labels(11), []);
          assert.equal(await f.store.github.backlog(), 0);
        },
        { comments: false },
      ));
  });
}
