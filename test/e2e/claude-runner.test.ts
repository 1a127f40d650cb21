/**
 * The first way in of the README: `baton up` runs `claude -p` for a job, with the prompt template,
 * Baton's MCP server (--mcp-config) and Baton's hooks in the project. The real Claude Code CLI
 * runs offline against the scripted model server; the model calls baton_heartbeat and
 * baton_effect through `baton mcp` under the runner's session and claim, writes a file, and ends.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.js';
import { baton, repoRoot } from '../support/cli.js';
import { CLAUDE_CLI, offlineEnv } from '../support/claude-code.js';
import { sqliteDatabase } from '../support/databases.js';
import { allUserText, startModelServer, type ModelRequest } from '../support/model-server.js';
import { waitUntil } from '../support/wait.js';

const BIN = join(repoRoot(), 'bin', 'baton.js');
const KEY = 'github:acme/api#40';

/** What the README's prompt template gives the model: the key and the epoch, read back here. */
function claimOf(request: ModelRequest): { key: string; epoch: number } {
  const m = /Baton task (\S+) .*epoch (\d+)/.exec(allUserText(request));
  assert.ok(m !== null, 'the prompt names the task and the epoch');
  return { key: m[1] ?? '', epoch: Number(m[2]) };
}

describe('baton up running claude -p with the MCP server and the hooks', () => {
  test('the model works under the runner claim: heartbeats and effects through MCP, progress through the hooks', async () => {
    const db = await sqliteDatabase().fresh();
    const dir = mkdtempSync(join(tmpdir(), 'baton-claude-runner-'));
    const store = await openStore(db);
    const out = join(dir, 'notes.txt');
    const model = await startModelServer([
      (r) => [{ type: 'tool_use', name: 'mcp__baton__baton_heartbeat', input: claimOf(r) }],
      [{ type: 'tool_use', name: 'Write', input: { file_path: out, content: 'fixed\n' } }],
      (r) => [
        {
          type: 'tool_use',
          name: 'mcp__baton__baton_effect',
          input: { ...claimOf(r), kind: 'note', payload: { file: 'notes.txt' } },
        },
      ],
      [{ type: 'text', text: 'Done.' }],
    ]);
    const up: { kill: (signal?: NodeJS.Signals) => void } = { kill: () => undefined };
    try {
      const mcp = await baton(db, 'mcp', '--print-config', 'claude');
      writeFileSync(join(dir, 'mcp.json'), mcp.stdout);
      assert.equal((await baton(db, 'hooks', 'install', 'claude', '--dir', dir)).code, 0);
      // The README's prompt template, word for word.
      const prompt =
        'You are working on Baton task {{key}} ({{title}}) under claim epoch {{epoch}}. Before each change ' +
        'call baton_heartbeat with that key and epoch; record pull requests and pushes with baton_effect; ' +
        'if a Baton tool answers ok:false, stop at once and say why.';
      const command =
        `"${process.execPath}" "${CLAUDE_CLI}" -p "${prompt}" --output-format json ` +
        `--mcp-config ${join(dir, 'mcp.json')} --allowedTools Read,Edit,Write,Bash,mcp__baton`;
      const enq = await baton(db, 'enqueue', KEY, '--command', command);
      assert.equal(enq.code, 0, enq.stderr);
      const log = openSync(join(dir, 'up.log'), 'a');
      const env = offlineEnv(model.url, { BATON_HOOK_STATE_DIR: join(dir, '.hook-state') });
      const child = spawn(
        process.execPath,
        [
          ...[BIN, '--db', db, 'up', '--host', 'h1', '--heartbeat-interval', '0.5'],
          // Agents inherit only an allowlist; the model's address and key are named, as the README says.
          ...['--agent-env', 'ANTHROPIC_*', '--agent-env', 'DISABLE_*', '--agent-env', 'CLAUDE_CODE_*'],
        ],
        {
          cwd: dir,
          env,
          stdio: ['ignore', log, log],
        },
      );
      up.kill = (signal) => child.kill(signal);
      const done = async () =>
        ['done', 'failed'].includes((await store.jobs.list({ key: KEY }))[0]?.status ?? '');
      await waitUntil(done, 90_000, 'the job to end');
      const [job] = await store.jobs.list({ key: KEY });
      const why = `${readFileSync(join(dir, 'up.log'), 'utf8')}\n${job?.outputTail ?? ''}`;
      assert.equal(job?.status, 'done', why);
      assert.equal(readFileSync(out, 'utf8'), 'fixed\n');
      // The runner writes the job's outcome, then releases the claim.
      const released = async () => (await store.claims.history(KEY))[0]?.outcome != null;
      await waitUntil(released, 10_000, 'the claim to be released');
      const [claim] = await store.claims.history(KEY);
      assert.equal(claim?.session, job?.agentSession);
      assert.equal(claim?.outcome, 'done', 'the runner released it, not the hooks');
      const [effect] = await store.effects.list({ key: KEY });
      assert.deepEqual([effect?.session, effect?.epoch, effect?.kind], [claim.session, claim.epoch, 'note']);
      const heartbeatResult = allUserText(model.requests[1] as ModelRequest);
      assert.match(heartbeatResult, new RegExp(`Your claim on ${KEY} at epoch 1 is current`));
      const progress = await store.progress.get(claim.session);
      assert.ok((progress?.toolCalls ?? 0) >= 3, `tool calls were marked: ${JSON.stringify(progress)}`);
      assert.equal(progress?.effects, 1);
      const sessions = await store.sessions.list();
      assert.equal(
        sessions.filter((s) => s.name === 'baton mcp').length,
        0,
        'MCP acted under the runner session',
      );
    } finally {
      up.kill('SIGTERM');
      await model.close();
      await store.close();
    }
  });
});
