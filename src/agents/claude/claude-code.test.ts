/**
 * Baton's hooks in the real Claude Code CLI, offline: `baton hooks install claude` writes the
 * project's settings, a scripted model server plays the model (tool calls, streamed), and the CLI
 * runs the hooks around them exactly as it does for a user. What the model is told comes back to
 * the server in the next request, so the tests read it there.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Coordinator } from '../../coordinator/coordinator.js';
import { openStore } from '../../store/open.js';
import type { Store } from '../../store/store.js';
import { baton } from '../../../test/support/cli.js';
import { offlineEnv, runClaude, type ClaudeRun } from '../../../test/support/claude-code.js';
import { sqliteDatabase } from '../../../test/support/databases.js';
import {
  allUserText,
  lastUserText,
  startModelServer,
  type ScriptBlock,
  type Turn,
} from '../../../test/support/model-server.js';

const KEY = 'github:acme/api#12';

interface Project {
  readonly db: string;
  readonly dir: string;
  readonly file: string;
  readonly store: Store;
}

async function withProject(body: (p: Project) => Promise<void>): Promise<void> {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  const dir = mkdtempSync(join(tmpdir(), 'baton-claude-project-'));
  const file = join(dir, 'a.txt');
  writeFileSync(file, 'hello\n');
  try {
    await store.tasks.add({ key: KEY, title: 'Fix login' });
    const installed = await baton(db, 'hooks', 'install', 'claude', '--dir', dir, '--task', KEY);
    assert.equal(installed.code, 0, installed.stderr);
    await body({ db, dir, file, store });
  } finally {
    await store.close();
  }
}

async function claude(p: Project, script: readonly Turn[]): Promise<ClaudeRun & { texts: string[] }> {
  const model = await startModelServer(script);
  try {
    const env = offlineEnv(model.url, {
      BATON_HOOK_STATE_DIR: mkdtempSync(join(tmpdir(), 'baton-hook-state-')),
      // Only the hooks heartbeat here, not the keeper: what the test sees comes from tool use.
      BATON_HOOK_HEARTBEAT_INTERVAL: '3600',
    });
    const run = await runClaude(p.dir, 'Fix the login bug.', env);
    assert.equal(run.code, 0, `claude exited ${run.code}: ${run.stdout} ${run.stderr}`);
    return { ...run, texts: model.requests.map(lastUserText) };
  } finally {
    await model.close();
  }
}

/** Claude Code's Edit refuses a file the model has not read in this session. */
const read = (file: string): ScriptBlock[] => [
  { type: 'tool_use', name: 'Read', input: { file_path: file } },
];
const edit = (file: string, from: string, to: string): ScriptBlock[] => [
  { type: 'tool_use', name: 'Edit', input: { file_path: file, old_string: from, new_string: to } },
];

describe('Claude Code hooks, in the real claude CLI', () => {
  test('a normal session claims at start, heartbeats and marks progress on tool use, and releases at the end', () =>
    withProject(async (p) => {
      let startContext = '';
      let heldDuringRun: number | null = null;
      await claude(p, [
        (req) => {
          startContext = allUserText(req);
          return [{ type: 'text', text: 'On it.' }, ...read(p.file)];
        },
        edit(p.file, 'hello', 'hello world'),
        async () => {
          heldDuringRun = (await p.store.tasks.get(KEY))?.holder?.session ?? null;
          return [
            {
              type: 'tool_use',
              name: 'Bash',
              input: { command: 'echo more >> a.txt', description: 'append' },
            },
          ];
        },
        [{ type: 'text', text: 'Done.' }],
      ]);
      assert.equal(readFileSync(p.file, 'utf8'), 'hello world\nmore\n');
      const [claim] = await p.store.claims.history(KEY);
      assert.ok(claim !== undefined);
      assert.equal(heldDuringRun, claim.session, 'the hooks held the task while the model worked');
      assert.match(
        startContext,
        new RegExp(`Baton: this session holds ${KEY} \\(epoch 1, Baton session ${claim.session}\\)`),
      );
      assert.equal(claim.outcome, 'released');
      assert.ok(claim.heartbeatAt > claim.claimedAt, 'tool use heartbeats the claim');
      const session = await p.store.sessions.get(claim.session);
      assert.equal(session?.state, 'ended');
      assert.match(session?.name ?? '', /^claude-code /);
      const progress = await p.store.progress.get(claim.session);
      assert.equal(progress?.toolCalls, 3, 'the Read, the Edit and the Bash call');
      assert.equal(progress?.note, 'tool Bash');
      const types = (await p.store.audit.list({ key: KEY })).map((e) => e.type);
      assert.deepEqual(types.slice(-2), ['claim:granted', 'claim:released']);
    }));

  test('a session whose task is held elsewhere is told to stop at start, and its edit is blocked', () =>
    withProject(async (p) => {
      const other = await p.store.sessions.start({ kind: 'human', host: 'desk-7', pid: 7 });
      assert.ok((await p.store.claims.acquire({ key: KEY, session: other.id })).ok);
      let startContext = '';
      const run = await claude(p, [
        (req) => {
          startContext = allUserText(req);
          return read(p.file);
        },
        // A model that does not listen: the hook stops it anyway.
        edit(p.file, 'hello', 'hello world'),
        [{ type: 'text', text: 'Stopping.' }],
      ]);
      const holder = `held by session ${other.id} on desk-7`;
      assert.match(
        startContext,
        new RegExp(`Baton: ${KEY} is ${holder} since .*Stop: do not work on ${KEY}`),
      );
      assert.match(startContext, /Edits and shell commands stay blocked in this session/);
      const blocked = run.texts[2] ?? '';
      assert.match(blocked, /^\[error\] /, 'the edit came back as an error');
      assert.match(blocked, new RegExp(holder));
      assert.equal(readFileSync(p.file, 'utf8'), 'hello\n', 'the file is unchanged');
      assert.equal((await p.store.tasks.get(KEY))?.holder?.session, other.id);
      assert.equal((await p.store.claims.history(KEY)).length, 1, 'no claim was granted to the hooks');
    }));

  test('an Edit after a force-release is blocked, and the file is unchanged', () =>
    withProject(async (p) => {
      const run = await claude(p, [
        read(p.file),
        edit(p.file, 'hello', 'hello world'),
        async () => {
          // An operator takes the task away while the model works.
          const forced = await new Coordinator(p.store).forceRelease({
            key: KEY,
            reason: 'reassigning',
            by: { name: 'operator' },
          });
          assert.ok(forced.ok);
          return [...edit(p.file, 'hello world', 'hello mars')];
        },
        [{ type: 'text', text: 'Stopped.' }],
      ]);
      assert.equal(
        readFileSync(p.file, 'utf8'),
        'hello world\n',
        'the edit after the force-release never happened',
      );
      const blocked = run.texts[3] ?? '';
      assert.match(blocked, /^\[error\] /);
      assert.match(blocked, new RegExp(`the claim on ${KEY} at epoch 1 is not current: no one holds it now`));
      assert.match(blocked, new RegExp(`Stop working on ${KEY} now`));
      assert.equal((await p.store.tasks.get(KEY))?.holder, null, 'the hook did not take the task back');
    }));

  test('an Edit after the claim was rescued and taken over is blocked, and the file is unchanged', () =>
    withProject(async (p) => {
      let taker = 0;
      const run = await claude(p, [
        read(p.file),
        edit(p.file, 'hello', 'hello world'),
        async () => {
          // The session went silent past the threshold: rescued, and another session takes the task.
          await new Promise((r) => setTimeout(r, 20));
          await p.store.recovery.rescueStale({
            staleAfterMs: 1,
            policy: { backoffBaseMs: 0, backoffMaxMs: 0 },
          });
          const other = await p.store.sessions.start({ kind: 'agent', host: 'other-box', pid: 8 });
          const r = await p.store.claims.acquire({ key: KEY, session: other.id });
          assert.ok(r.ok);
          taker = other.id;
          return [...edit(p.file, 'hello world', 'hello mars')];
        },
        [{ type: 'text', text: 'Stopped.' }],
      ]);
      assert.equal(readFileSync(p.file, 'utf8'), 'hello world\n', 'the second edit never happened');
      const blocked = run.texts[3] ?? '';
      assert.match(blocked, /^\[error\] /);
      const rescued = `is not current: its session has ended, and ${KEY} is held by session ${taker} on other-box`;
      assert.match(blocked, new RegExp(`${rescued} since .*\\(epoch 2\\)`));
      assert.match(blocked, new RegExp(`Stop working on ${KEY} now`));
      assert.equal((await p.store.tasks.get(KEY))?.holder?.session, taker, 'the new holder keeps it');
    }));
});
