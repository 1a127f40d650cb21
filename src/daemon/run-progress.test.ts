/**
 * A run's progress marks from what the runner sees: its agent's output, and in its worktree the
 * files that changed and the commits made (a real git repository, a real store).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import { sqliteDatabase } from '../../test/support/databases.js';
import { commitFile, isolateGit, makeRepo } from '../../test/support/git.js';
import { RunProgress } from './run-progress.js';

isolateGit();

test('marks output bytes, changed files and commits as progress, and a run without marks as stalled', async () => {
  const store = await openStore(await sqliteDatabase().fresh());
  try {
    const { repo } = makeRepo(mkdtempSync(join(tmpdir(), 'baton-progress-')));
    const runner = await store.sessions.start({ kind: 'daemon', host: 'h', pid: 1 });
    const agent = await store.sessions.start({ kind: 'agent', host: 'h', pid: 2 });
    await store.jobs.enqueue({ key: 'k' });
    const job = await store.jobs.claimNext({ session: runner.id, start: true });
    assert.ok(job !== null);
    await store.dispatch.attach({
      id: job.id,
      session: runner.id,
      epoch: job.epoch,
      agentSession: agent.id,
      pid: 3,
    });
    const lines: string[] = [];
    const options = {
      store,
      job,
      runnerSession: runner.id,
      agentSession: agent.id,
      log: (l: string) => lines.push(l),
    };
    const progress = new RunProgress({
      ...options,
      workspaceDir: repo,
      stall: { stallAfterMs: 3_600_000, action: 'kill' },
    });
    await progress.baseline();
    assert.equal(await progress.tick(), null);
    assert.equal(await store.progress.get(agent.id), null, 'nothing happened: no mark');

    progress.output(120);
    writeFileSync(join(repo, 'new.txt'), 'one\n');
    appendFileSync(join(repo, 'README.md'), 'more\n');
    await progress.tick();
    let p = await store.progress.get(agent.id);
    assert.deepEqual([p?.outputBytes, p?.filesChanged, p?.commits], [120, 2, 0]);
    assert.equal(p?.note, '2 files changed');

    appendFileSync(join(repo, 'README.md'), 'and more\n');
    await progress.tick();
    p = await store.progress.get(agent.id);
    assert.equal(p?.filesChanged, 3, 'a second edit of a modified file counts');

    const head = commitFile(repo, 'new.txt', 'two\n');
    await progress.tick();
    p = await store.progress.get(agent.id);
    assert.equal(p?.commits, 1);
    assert.equal(p?.note, `commit ${head.slice(0, 7)}`);

    const silent = new RunProgress({
      ...options,
      workspaceDir: null,
      stall: { stallAfterMs: 0, action: 'kill' },
    });
    assert.equal(await silent.tick(), 'kill', 'no mark since the last one, with a threshold of zero');
    assert.match(silent.reason(), /^stalled: no progress since \d{4}-.*\(stall-after 0 s\)$/);
    assert.match(lines.join('\n'), /stalled, no progress since .* \(action kill\)/);
    const none = new RunProgress({
      ...options,
      workspaceDir: null,
      stall: { stallAfterMs: 0, action: 'none' },
    });
    progress.output(1);
    await progress.tick();
    assert.equal(await none.tick(), null, 'action none only reports');
    assert.equal((await store.audit.list({ type: 'job:stalled' })).length, 2);
  } finally {
    await store.close();
  }
});
