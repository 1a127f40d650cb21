/**
 * Commit provenance with real git, on both engines: `baton guard install` adds a commit-msg hook
 * that stamps Baton-Task, Baton-Session, Baton-Epoch and Baton-Host on every commit made under the
 * claim, and `baton audit commits` checks the stamps against the ledger: a commit made after its
 * epoch was fenced off, or naming another host, is flagged; one without trailers is listed.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { cliOn } from '../support/cli.js';
import { commitFile, git, isolateGit, makeRepo } from '../support/git.js';

const home = isolateGit();
const KEY = 'github:acme/api#77';

interface Audit {
  readonly checked: number;
  readonly ok: number;
  readonly none: number;
  readonly impossible: number;
  readonly commits: readonly { commit: string; status: string; reasons: string[] }[];
}

/** A commit made with these variables set (the runner gives its agents BATON_*). */
function commitWith(repo: string, file: string, env: Record<string, string>): string {
  writeFileSync(join(repo, file), `${file}\n`);
  const opts = { cwd: repo, env: { ...process.env, ...env }, encoding: 'utf8' as const };
  execFileSync('git', ['add', file], opts);
  execFileSync('git', ['commit', '--quiet', '-m', `write ${file}`], opts);
  return git(repo, 'rev-parse', 'HEAD');
}

for (const engine of bothEngines()) {
  void describe(`commit provenance on ${engine.name}`, () => {
    test('flags commits made under a fenced-off epoch or another host, lists those without trailers', async () => {
      const db = await engine.fresh();
      const cli = cliOn(db);
      const { repo } = makeRepo(home);
      const unstamped = git(repo, 'rev-parse', 'HEAD');
      const a = (await cli.json<{ id: number }>(0, 'session', 'start', '--host', 'box-1')).id;
      const b = (await cli.json<{ id: number }>(0, 'session', 'start', '--host', 'box-2')).id;
      await cli.json(0, 'task', 'add', KEY);
      await cli.json(0, 'claim', KEY, '--session', String(a));
      await cli.json(
        0,
        'guard',
        'install',
        '--dir',
        repo,
        '--session',
        String(a),
        '--key',
        KEY,
        '--epoch',
        '1',
      );
      const fromFile = commitFile(repo, 'a.txt', 'a\n');
      const body = git(repo, 'log', '-1', '--format=%B');
      for (const trailer of [
        `Baton-Task: ${KEY}`,
        `Baton-Session: ${a}`,
        'Baton-Epoch: 1',
        'Baton-Host: box-1',
      ]) {
        assert.ok(body.includes(trailer), `${trailer} in:\n${body}`);
      }
      const stamp = { BATON_KEY: KEY, BATON_SESSION: String(a), BATON_EPOCH: '1' };
      const fromEnv = commitWith(repo, 'b.txt', { ...stamp, BATON_HOST: 'box-1' });
      const otherHost = commitWith(repo, 'c.txt', { ...stamp, BATON_HOST: 'box-9' });
      // The claim is fenced off: released, and granted again to session b at epoch 2.
      await cli.json(0, 'release', KEY, '--session', String(a), '--epoch', '1', '--outcome', 'released');
      await cli.json(0, 'claim', KEY, '--session', String(b));
      const late = new Date(Date.now() + 60_000).toISOString();
      const fenced = commitWith(repo, 'd.txt', { GIT_COMMITTER_DATE: late, GIT_AUTHOR_DATE: late });
      assert.ok(
        git(repo, 'log', '-1', '--format=%B').includes('Baton-Epoch: 1'),
        'stamped from the worktree file',
      );
      const run = await cli.run('audit', 'commits', repo, '--json');
      assert.equal(run.code, 1, run.stderr);
      const audit = JSON.parse(run.stdout) as Audit;
      assert.deepEqual([audit.checked, audit.ok, audit.none, audit.impossible], [5, 2, 1, 2]);
      const status = new Map(audit.commits.map((c) => [c.commit, c]));
      assert.equal(status.get(unstamped)?.status, 'none');
      assert.match(
        status.get(fenced)?.reasons.join(' ') ?? '',
        /after epoch 1 was fenced off .*epoch 2 went to session/,
      );
      assert.match(status.get(otherHost)?.reasons.join(' ') ?? '', /ran on host box-1, not box-9/);
      assert.equal(status.has(fromFile) || status.has(fromEnv), false, 'possible stamps are not listed');
      const range = await cli.json<Audit>(0, 'audit', 'commits', repo, `${unstamped}..${fromEnv}`, '--all');
      assert.deepEqual(
        range.commits.map((c) => [c.commit, c.status]),
        [
          [fromEnv, 'ok'],
          [fromFile, 'ok'],
        ],
      );
      // A range git refuses, or one that would read as an option, is bad input: exit 2, one line.
      for (const bad of [['nope..HEAD'], ['--', '--output=x']]) {
        const refused = await cli.run('audit', 'commits', repo, ...bad);
        assert.equal(refused.code, 2, `${bad.join(' ')}: ${refused.stderr}`);
        assert.match(refused.stderr, /is not a revision range of .*: fatal: .* — give one git log takes/);
        assert.equal(refused.stderr.trim().split('\n').length, 1);
      }
    });
  });
}
