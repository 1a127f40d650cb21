/**
 * `baton hooks install claude | uninstall`: Baton's hooks in a project's `.claude/settings.json`
 * (src/agents/claude/settings.ts). Two refusals keep a typo from leaving a session unguarded:
 * a --dir that does not exist (exit 2: nothing is created there), and a --task the database does not
 * hold (exit 4), since the hooks would then claim nothing and guard no edit. `--task-added-later`
 * installs for a task added afterwards; a database that cannot be reached is a warning, as the hooks
 * block the guarded tools until it answers.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { installHooks, uninstallHooks, type ReleaseOn } from '../../agents/claude/settings.js';
import { installedBatonBin } from '../../coordinator/guard.js';
import { BatonError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import { validateKey, validateOneOf } from '../../core/validate.js';
import { withoutPassword } from '../../core/redact.js';
import { absoluteDbUrl, openStore } from '../../store/open.js';
import { Output, writeErrorLine } from '../output.js';
import { dbUrl, type GlobalOptions } from '../run.js';

interface InstallOptions {
  readonly dir?: string;
  readonly task?: string;
  readonly releaseOn?: string;
  readonly taskAddedLater?: boolean;
}

export function registerHooksInstall(hooks: Command): void {
  hooks
    .command('install <agent>')
    .description("merge Baton's hooks into <dir>/.claude/settings.json (agent: claude); idempotent")
    .option('--dir <dir>', 'the project, a directory that exists (default: the current directory)')
    .option('--task <key>', 'the task every session here works (default: BATON_KEY, else the branch)')
    .option('--task-added-later', 'install even though the database does not hold --task yet')
    .option('--release-on <when>', 'give the claim back at each stop (default) or at session-end only')
    .action((agent: string, options: InstallOptions, cmd: Command) => install(agent, options, cmd));
  hooks
    .command('uninstall [agent]')
    .description("remove Baton's hooks from <dir>/.claude/settings.json, keeping everything else")
    .option('--dir <dir>', 'the project (default: the current directory)')
    .action((agent: string | undefined, options: { dir?: string }, cmd: Command) => {
      if (agent !== undefined) claudeOnly(agent);
      const result = uninstallHooks(projectDir(options.dir));
      new Output(cmd.optsWithGlobals<GlobalOptions>().json === true).result(result, () =>
        result.changed ? `removed Baton's hooks from ${result.file}` : `no Baton hooks in ${result.file}`,
      );
    });
}

async function install(agent: string, options: InstallOptions, cmd: Command): Promise<void> {
  claudeOnly(agent);
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const releaseOn: ReleaseOn =
    options.releaseOn === undefined
      ? 'stop'
      : validateOneOf('--release-on', options.releaseOn, ['stop', 'session-end']);
  const dir = projectDir(options.dir);
  const task = options.task === undefined ? null : validateKey(options.task);
  const db = dbUrl(globals);
  const warning = task === null || options.taskAddedLater === true ? undefined : await checkTask(db, task);
  const result = installHooks({
    dir,
    node: process.execPath,
    batonBin: installedBatonBin(),
    db: withoutPassword(absoluteDbUrl(db, process.cwd())),
    task,
    releaseOn,
  });
  new Output(globals.json === true).result(warning === undefined ? result : { ...result, warning }, () =>
    result.changed
      ? `installed Baton's hooks in ${result.file} (${result.events.join(', ')})`
      : `${result.file} already has them`,
  );
  // One line on stderr (exit 0: the hooks are installed); --json also carries it as `warning`.
  if (warning !== undefined) writeErrorLine(`warning: ${warning}`, undefined);
}

/**
 * NotFoundError (exit 4, nothing written) when the database answers without the task; a warning
 * when it cannot be asked. Opened as every command but `baton up` opens it: never created here.
 */
async function checkTask(db: string, key: string): Promise<string | undefined> {
  let store;
  try {
    store = await openStore(db, { intent: 'use' });
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    const why = error.hint ? `${error.message} — ${error.hint}` : error.message;
    return (
      `could not check that task ${key} is in Baton (${why}); the hooks block edits until the database ` +
      `answers, and guard nothing if it does not hold ${key}: check with \`baton task show ${key}\``
    );
  }
  try {
    if ((await store.tasks.get(key)) !== null) return undefined;
  } finally {
    await store.close();
  }
  throw new NotFoundError(
    'task',
    key,
    `the hooks would claim nothing and guard no edit; add it with \`baton task add ${key}\`, ` +
      'find its key with `baton task list`, or give --task-added-later if it will be added',
  );
}

/** The project directory, absolute; InvalidInputError (exit 2) when it is not an existing directory. */
function projectDir(raw: string | undefined): string {
  const dir = resolve(raw ?? '.');
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) {
    throw new InvalidInputError(
      `--dir ${dir} is not a directory that exists; nothing was written`,
      'give the root of the project (where .claude/ goes), or create the directory first',
    );
  }
  return dir;
}

function claudeOnly(agent: string): void {
  if (agent !== 'claude') {
    throw new InvalidInputError(
      `no hooks for ${JSON.stringify(agent)}`,
      'Baton has hooks for claude (Claude Code)',
    );
  }
}
