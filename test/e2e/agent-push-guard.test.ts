/**
 * The push guard of an agent without database credentials (issue 17), end to end: a real
 * `baton up --http` runs a real agent in its own worktree with only BATON_URL and BATON_TOKEN.
 * Its `git push` runs the pre-push hook, which asks the API with the agent's token (never the
 * database): allowed while its claim is live; once the agent has let its claim go, the same push
 * is refused and the remote branch never appears.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, ROOT } from './cluster-support.js';

isolateGit();
const BIN = join(ROOT, 'bin', 'baton.js');

for (const db of bothEngines()) {
  describe(`the push guard over HTTP (${db.name})`, () => {
    test("an agent's push is checked through the API with its token and refused once its claim is gone", async () => {
      const c = await clusterFixture(db);
      try {
        const { repo, remote } = makeRepo(c.dir);
        const baton = `'${process.execPath}' '${BIN}'`;
        const out = join(c.dir, 'out');
        const agent = [
          `env > '${out}.env'`,
          `${baton} guard check --json > '${out}.check' 2>&1`,
          'echo a > a.txt && git add a.txt && git commit -q -m a',
          `git push -q origin HEAD:refs/heads/first > '${out}.push1' 2>&1; echo $? > '${out}.push1.code'`,
          // The run's first claim heartbeat goes at its first sample (250 ms), the next 15 s later:
          // released after the first, the claim is refused only at the second, which leaves the
          // refused push its seconds (CI once saw the agent release before the first beat).
          'sleep 3',
          `${baton} release "$BATON_KEY" --session "$BATON_SESSION" --epoch "$BATON_EPOCH" > '${out}.release' 2>&1`,
          'echo b > b.txt && git add b.txt && git commit -q -m b',
          `git push -q origin HEAD:refs/heads/second > '${out}.push2' 2>&1; echo $? > '${out}.push2.code'`,
        ].join('; ');
        for (const args of [
          ['workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree'],
          ['task', 'add', 'gh:acme/api#7', '--workspace', 'repo'],
          ['enqueue', 'gh:acme/api#7', '--command', agent],
        ]) {
          const r = await c.baton(...args);
          assert.equal(r.code, 0, r.stderr);
        }
        // The runner kills an agent whose claim is gone at its next claim heartbeat: a slow one
        // leaves the agent the seconds its refused push takes (a fenced holder's moment).
        const slow = ['--heartbeat-interval', '15', '--stale-after', '90', '--lease-ttl', '30'];
        const up = c.up('h1', '--http', '127.0.0.1:0', ...slow);
        await waitUntil(() => existsSync(`${out}.push2.code`), 60_000, 'the agent to push twice').catch(
          (error: unknown) => {
            const seen = ['check', 'push1', 'release'].map((f) =>
              existsSync(`${out}.${f}`) ? `${f}: ${readFileSync(`${out}.${f}`, 'utf8')}` : `${f}: none`,
            );
            throw new Error(`${String(error)}\n${seen.join('\n')}\n${up.log()}`);
          },
        );

        const env = readFileSync(`${out}.env`, 'utf8');
        assert.match(env, /^BATON_TOKEN=baton_/m);
        assert.doesNotMatch(env, /^BATON_DB=/m, 'the agent holds no database');
        const check = JSON.parse(readFileSync(`${out}.check`, 'utf8')) as Record<string, unknown>;
        assert.deepEqual([check['ok'], check['via'], check['source']], [true, 'api', 'env']);
        assert.equal(
          readFileSync(`${out}.push1.code`, 'utf8').trim(),
          '0',
          readFileSync(`${out}.push1`, 'utf8'),
        );
        assert.notEqual(git(remote, 'for-each-ref', 'refs/heads/first'), '', 'the first push landed');

        assert.notEqual(readFileSync(`${out}.push2.code`, 'utf8').trim(), '0');
        assert.match(readFileSync(`${out}.push2`, 'utf8'), /baton: push refused: /);
        assert.equal(git(remote, 'for-each-ref', 'refs/heads/second'), '', 'the refused push left no branch');
      } finally {
        await c.close();
      }
    });
  });
}
