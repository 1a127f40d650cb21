/**
 * What an agent started by `baton up` can see and spend: none of the daemon's secrets in its
 * environment, only what the operator allows; and a RAM budget that the git hooks Baton installs
 * (the push guard, a Node process) do not count against.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTAINMENT_KINDS, type ContainmentKind } from '../../src/core/containment.js';
import { openContainment } from '../../src/os/containment.js';
import { sqliteDatabase } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, type ClusterFixture } from './cluster-support.js';

isolateGit();

async function withCluster(body: (c: ClusterFixture) => Promise<void>): Promise<void> {
  const c = await clusterFixture(sqliteDatabase());
  try {
    await body(c);
  } finally {
    await c.close();
  }
}

const statusOf = async (c: ClusterFixture, key: string) => (await c.store.jobs.list({ key }))[0];

/** Why this host cannot offer the kind, or false when it can. */
async function unavailable(kind: ContainmentKind): Promise<string | false> {
  try {
    await openContainment({ choice: kind, shimPath: '' }).close();
    return false;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const skipFor = Object.fromEntries(
  await Promise.all(CONTAINMENT_KINDS.map(async (k) => [k, await unavailable(k)] as const)),
) as Record<ContainmentKind, string | false>;

describe('what an agent sees and spends', () => {
  test("an agent dumping its environment sees none of the daemon's secrets, only what --agent-env allows", () =>
    withCluster(async (c) => {
      const secrets = {
        AWS_SECRET_ACCESS_KEY: 'aws-secret-7f3a',
        GITHUB_TOKEN: 'ghp_token_9c1d',
        DATABASE_URL: 'postgres://app:db-pass-51e2@db/app',
      };
      await c.store.jobs.enqueue({ key: 'dump', command: 'env > env.txt' });
      const allowed = { ANTHROPIC_API_KEY: 'sk-allowed', ANTHROPIC_MODEL: 'opus', TEAM_NOTE: 'allowed' };
      c.upWithEnv({ ...secrets, ...allowed }, 'a', '--agent-env', 'ANTHROPIC_*', '--agent-env', 'TEAM_NOTE');
      await waitUntil(
        async () => (await statusOf(c, 'dump'))?.status === 'done',
        20_000,
        'the job to finish',
      );
      const env = readFileSync(join(c.dir, 'env.txt'), 'utf8');
      for (const value of Object.values(secrets)) assert.ok(!env.includes(value), `leaked ${value}`);
      for (const [name, value] of Object.entries(allowed))
        assert.ok(env.includes(`${name}=${value}\n`), name);
      for (const name of [
        'PATH',
        'HOME',
        'BATON_KEY',
        'BATON_URL',
        'BATON_TOKEN',
        'BATON_SESSION',
        'BATON_EPOCH',
      ]) {
        assert.match(env, new RegExp(`^${name}=`, 'm'));
      }
      // baton up serves HTTP by default: the agent reaches Baton there, with no database at all.
      assert.doesNotMatch(env, /^(BATON_DB|DATABASE_URL|PG[A-Z_]*)=/m);
      assert.ok(!env.includes(c.url), 'no database path');
    }));

  test('a job whose template is refused fails once, saying why, and opens no log for it', () =>
    withCluster(async (c) => {
      // Enqueued past the coordinator's check, as by a version that did not check templates.
      const { job } = await c.store.jobs.enqueue({ key: 'old', command: 'echo {{tittle}}' });
      c.up('a');
      await waitUntil(async () => (await statusOf(c, 'old'))?.status === 'failed', 20_000, 'the job to fail');
      const failed = await statusOf(c, 'old');
      assert.equal(failed?.attempt, 1, 'failed for good on its first attempt');
      assert.match(failed?.reason ?? '', /unknown placeholder \{\{tittle\}\}/);
      const logs = join(c.dir, '.baton', 'logs');
      assert.ok(
        !existsSync(join(logs, `job-${job.id}-attempt-1.log`)),
        'no log file (and no descriptor) for it',
      );
    }));

  test('baton up makes state left readable by others private, with a note', () =>
    withCluster(async (c) => {
      const state = join(c.dir, '.baton');
      mkdirSync(join(state, 'logs'), { recursive: true, mode: 0o755 });
      chmodSync(state, 0o755);
      writeFileSync(join(state, 'logs', 'job-1-attempt-1.log'), 'old output\n', { mode: 0o644 });
      chmodSync(c.url, 0o644);
      const up = c.up('a');
      await up.waitRunning();
      assert.match(up.log(), /note: \.baton was 0755, now 0700/);
      assert.equal(statSync(state).mode & 0o777, 0o700);
      assert.equal(statSync(join(state, 'logs')).mode & 0o777, 0o700);
      assert.equal(statSync(join(state, 'logs', 'job-1-attempt-1.log')).mode & 0o777, 0o600);
      assert.equal(statSync(c.url).mode & 0o777, 0o600);
    }));

  for (const kind of CONTAINMENT_KINDS) {
    test(
      `the push guard runs outside the agent's RAM budget (${kind}): a 48 MB job commits and pushes`,
      { skip: skipFor[kind] },
      () =>
        withCluster(async (c) => {
          const { repo, remote } = makeRepo(c.dir);
          const ok = async (...args: string[]) => {
            const r = await c.baton(...args);
            assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
          };
          await ok('workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree');
          await ok('task', 'add', 'gh:acme/api#48', '--workspace', 'repo');
          const work =
            'echo fix > fix.txt && git add fix.txt && git commit -q -m fix && git push -q origin HEAD';
          await ok('enqueue', 'gh:acme/api#48', '--ram-mb', '48', '--command', work);
          const up = c.up('a', '--containment', kind);
          const active = ['queued', 'claimed', 'running'];
          await waitUntil(
            async () => !active.includes((await statusOf(c, 'gh:acme/api#48'))?.status ?? ''),
            30_000,
            'the job to end',
          );
          const job = await statusOf(c, 'gh:acme/api#48');
          assert.equal(job?.status, 'done', `${job?.reason ?? ''}\n${job?.outputTail ?? ''}\n${up.log()}`);
          assert.equal(git(remote, 'log', '-1', '--format=%s', 'baton/gh-acme-api-48-23c3b518'), 'fix');
        }),
    );
  }
});
