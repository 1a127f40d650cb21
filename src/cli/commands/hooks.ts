/**
 * `baton hooks install claude | uninstall` (hooks-install.ts) writes Baton's hooks into a project's
 * `.claude/settings.json`; `baton hook <event>` is what those hooks run (src/agents/claude/). A
 * hook speaks Claude Code's contract, not the CLI's: JSON in on stdin, and for PreToolUse exit 0
 * to allow and exit 2 to block with the reason on stderr, so it sets its own exit code. A hook
 * that fails for any reason blocks a guarded tool only while a task is known to be claimed.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import type { AgentClient } from '../../agents/client.js';
import { installedBatonBin } from '../../coordinator/guard.js';
import { BatonError, InvalidInputError } from '../../core/errors.js';
import { validateId, validateInteger } from '../../core/validate.js';
import { invokingProgram, type ProcessIdentity } from '../../os/process-ancestry.js';
import { Exit } from '../exit-codes.js';
import { refuseJson, type GlobalOptions } from '../run.js';
import { registerHooksInstall } from './hooks-install.js';

interface HookOptions {
  readonly defaultDb?: string;
  readonly task?: string;
}

export function registerHooks(program: Command): void {
  const hooks = program.command('hooks').description("install Baton's hooks into an agent's settings");
  registerHooksInstall(hooks);

  program
    .command('hook <event>')
    .description('run one Claude Code hook: session-start, pre-tool, post-tool, stop or session-end')
    .option('--default-db <url>', 'the database when neither --db nor BATON_DB names one')
    .option('--task <key>', 'the task this project works')
    .action((event: string, options: HookOptions, cmd: Command) => runHookCommand(event, options, cmd));

  program
    .command('hook-keeper', { hidden: true })
    .description('heartbeat a session the hooks started while its Claude Code process lives')
    .requiredOption('--session <id>')
    .option('--claude-pid <pid>')
    .option('--claude-start <ticks>')
    .action((options: { session: string; claudePid?: string; claudeStart?: string }, cmd: Command) =>
      runKeeper(options, cmd),
    );
}

async function runHookCommand(event: string, options: HookOptions, cmd: Command): Promise<void> {
  refuseJson(
    cmd,
    "its stdout and exit code are Claude Code's hook protocol",
    'leave out --json; Claude Code runs it as `baton hooks install claude` wrote it',
  );
  const { isHookCommand, parseHookInput } = await import('../../agents/claude/hook-input.js');
  if (!isHookCommand(event)) {
    throw new InvalidInputError(
      `unknown hook ${JSON.stringify(event)}`,
      'use session-start, pre-tool, post-tool, stop or session-end',
    );
  }
  const { runHook } = await import('../../agents/claude/hooks.js');
  const { stateDir, readState } = await import('../../agents/claude/hook-state.js');
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const task = options.task === undefined ? null : options.task;
  let client: AgentClient | null = null;
  let outcome;
  let sessionId: string | null = null;
  try {
    const input = parseHookInput(event, await readStdin());
    sessionId = input.sessionId;
    client = await openClient(globals.db, options.defaultDb, input.cwd);
    const ctx = { client, env: process.env, stateDir: stateDir(process.env), task, host: hostname() };
    outcome = await runHook(event, input, {
      ...ctx,
      claude: invokingProgram(),
      startKeeper: keeperStarter(client),
    });
  } catch (error) {
    const why =
      error instanceof BatonError && error.hint ? `${error.message} — ${error.hint}` : String(error);
    const claimed = sessionId !== null && knownKey(readState, stateDir(process.env), sessionId);
    const guarded = event === 'pre-tool' && (claimed || process.env['BATON_KEY'] || task !== null);
    outcome = guarded
      ? {
          exitCode: 2 as const,
          stderr: `Baton: cannot check this session's claim (${why}). Stop, and tell the user.\n`,
        }
      : // PreToolUse's contract is 0 to allow and 2 to block: an unguarded tool is allowed, with a note.
        {
          exitCode: event === 'pre-tool' ? (0 as const) : (1 as const),
          stderr: `baton hook ${event}: ${why}\n`,
        };
  } finally {
    await client?.close();
  }
  if (outcome.stdout !== undefined) process.stdout.write(outcome.stdout);
  if (outcome.stderr !== undefined) process.stderr.write(outcome.stderr);
  if (outcome.exitCode !== 0) throw new Exit(outcome.exitCode);
}

/** The task the state names; null when it cannot be read (its folder refused: the error says why). */
function knownKey(
  read: (dir: string, id: string) => { readonly key: string | null } | null,
  dir: string,
  id: string,
): string | null {
  try {
    return read(dir, id)?.key ?? null;
  } catch {
    return null;
  }
}

async function openClient(
  db: string | undefined,
  defaultDb: string | undefined,
  cwd: string,
): Promise<AgentClient> {
  const { openAgentClient } = await import('../../agents/local-client.js');
  return openAgentClient({ db, defaultDb, env: process.env, cwd });
}

/** Seconds between the keeper's heartbeats: BATON_HOOK_HEARTBEAT_INTERVAL, else 2. */
function keeperIntervalMs(): number {
  const raw = process.env['BATON_HOOK_HEARTBEAT_INTERVAL'];
  const seconds = raw ? Number(raw) : 2;
  return Number.isFinite(seconds) && seconds >= 0.1 && seconds <= 3600 ? Math.round(seconds * 1000) : 2000;
}

/** The environment without BATON_URL: BATON_DB names the keeper's database, as --db did (it wins over BATON_URL). */
function databaseOnly(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const rest = { ...env };
  delete rest['BATON_URL'];
  return rest;
}

/** Starts the keeper detached, with nothing attached to Claude Code's pipes (it would wait for them). */
function keeperStarter(client: AgentClient) {
  return (session: number, claude: ProcessIdentity | null): void => {
    const watch =
      claude === null
        ? []
        : ['--claude-pid', String(claude.pid), '--claude-start', String(claude.startTicks)];
    // Over HTTP the target is BATON_URL, no database: the keeper inherits BATON_URL and BATON_TOKEN.
    // Else the database goes in BATON_DB, never in its arguments, which every uid reads (its password).
    const env = /^https?:/i.test(client.target)
      ? process.env
      : { ...databaseOnly(process.env), BATON_DB: client.target };
    const args = [installedBatonBin(), 'hook-keeper', '--session', String(session), ...watch];
    spawn(process.execPath, args, { detached: true, stdio: 'ignore', env }).unref();
  };
}

async function runKeeper(
  options: { session: string; claudePid?: string; claudeStart?: string },
  cmd: Command,
) {
  refuseJson(cmd, 'it heartbeats a session while Claude Code runs and prints nothing');
  const { keepSession } = await import('../../agents/claude/keeper.js');
  const session = validateId('session', options.session);
  const claude =
    options.claudePid === undefined
      ? null
      : {
          pid: validateInteger('--claude-pid', options.claudePid, 1, 2 ** 31),
          startTicks: validateInteger(
            '--claude-start',
            options.claudeStart ?? '0',
            0,
            Number.MAX_SAFE_INTEGER,
          ),
        };
  const client = await openClient(cmd.optsWithGlobals<GlobalOptions>().db, undefined, process.cwd());
  try {
    const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms));
    await keepSession({ client, session, claude, intervalMs: keeperIntervalMs(), sleep });
  } finally {
    await client.close();
  }
}

function readStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    return Promise.reject(
      new InvalidInputError(
        'a hook reads JSON on stdin',
        'Claude Code runs it; see `baton hooks install claude`',
      ),
    );
  }
  return new Promise((deliver, reject) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => (text += chunk));
    process.stdin.on('end', () => deliver(text));
    process.stdin.on('error', reject);
  });
}
