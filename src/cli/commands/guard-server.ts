/**
 * `baton guard server-install <bare-repo>` and `baton guard receive` (what its pre-receive hook
 * runs): the enforcing side of the push guard, on the repository pushes go to
 * (coordinator/guard-server.ts). A refused ref is one line on stderr, which git shows the pusher
 * as `remote: baton: push to … refused: …`; any refusal refuses the whole push (exit 3).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { Coordinator } from '../../coordinator/coordinator.js';
import { absoluteDb, installedBatonBin } from '../../coordinator/guard.js';
import {
  DEFAULT_PROTECTED,
  validateProtectPatterns,
  installServerGuard,
  judgePush,
  parseRefUpdates,
  readServerConfig,
} from '../../coordinator/guard-server.js';
import { withoutPassword } from '../../core/redact.js';
import { openStore } from '../../store/open.js';
import { Output, writeErrorLine } from '../output.js';
import { Refusal } from '../refusal.js';
import { collect, dbUrl, type GlobalOptions } from '../run.js';

export function registerGuardServer(guard: Command): void {
  guard
    .command('server-install <bare-repo>')
    .description("install the enforcing pre-receive hook: pushes to a task's branch need its live claim")
    .option(
      '--protect <ref-glob>',
      `refs that need a claim (default ${DEFAULT_PROTECTED.join(', ')}); repeatable`,
      collect,
    )
    .option(
      '--require-token',
      "refuse a protected push that does not carry the holder's token (the push option baton-token=)",
    )
    .action((repo: string, options: ServerInstallOptions, cmd: Command) => serverInstall(repo, options, cmd));
  guard
    .command('receive')
    .description(
      'judge the refs of a push read from stdin (the pre-receive hook runs this in the bare repository)',
    )
    .action((_o: unknown, cmd: Command) => receive(cmd));
}

interface ServerInstallOptions {
  readonly protect?: string[];
  readonly requireToken?: boolean;
}

async function serverInstall(repo: string, options: ServerInstallOptions, cmd: Command): Promise<void> {
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const protect = validateProtectPatterns(options.protect ?? DEFAULT_PROTECTED);
  const db = absoluteDb(dbUrl(globals), process.cwd());
  const result = await installServerGuard({
    repo: resolve(repo),
    db,
    protect,
    requireToken: options.requireToken === true,
    node: process.execPath,
    batonBin: installedBatonBin(),
  });
  new Output(globals.json === true).result({ ...result, db: withoutPassword(db) }, () => [
    `wrote ${result.hook}: pushes to ${protect.join(', ')} need the task's live claim`,
    `settings in ${result.config} (database ${withoutPassword(db)}; its password, if any, comes from ` +
      "PGPASSFILE or PGPASSWORD in the git server's environment)",
    'agents of a `baton up` whose workspace has this repository as a remote push with a plain `git push`: ' +
      'their git sends the claim and their token as push options (push.pushOption in its environment)' +
      (options.requireToken === true ? '; the token is required' : ''),
    'others push with: git push -o baton-key="$BATON_KEY" -o baton-epoch="$BATON_EPOCH", the token only ' +
      'from the environment, never on a command line: export GIT_CONFIG_COUNT=1 ' +
      'GIT_CONFIG_KEY_0=push.pushOption GIT_CONFIG_VALUE_0="baton-token=$BATON_TOKEN"',
  ]);
}

function readStdin(): Promise<string> {
  return new Promise((done, fail) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => (text += chunk));
    process.stdin.on('end', () => done(text));
    process.stdin.on('error', fail);
  });
}

async function receive(cmd: Command): Promise<void> {
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  // git runs pre-receive in the bare repository (GIT_DIR).
  const repo = resolve(process.env['GIT_DIR'] ?? '.');
  const config = readServerConfig(repo);
  const updates = parseRefUpdates(await readStdin());
  const store = await openStore(globals.db ?? config.db, { intent: 'use' });
  let verdicts;
  try {
    verdicts = await judgePush(new Coordinator(store), repo, config, updates, process.env);
  } finally {
    await store.close();
  }
  const refused = verdicts.filter((verdict) => !verdict.ok);
  for (const verdict of verdicts) {
    if (verdict.ok) writeErrorLine(`push to ${verdict.ref} allowed: ${verdict.why}`, undefined);
  }
  for (const verdict of refused.slice(0, -1)) {
    writeErrorLine(`push to ${verdict.ref} refused: ${verdict.why}`, verdict.fix);
  }
  const last = refused[refused.length - 1];
  if (last === undefined) {
    // Allowed: the verdicts as JSON with --json (the hook git runs prints nothing on stdout).
    new Output(globals.json === true).result({ ok: true, verdicts }, () => []);
    return;
  }
  throw new Refusal(
    'fenced',
    'fenced',
    `push to ${last.ref} refused: ${last.why}`,
    last.fix ?? 'your work is fenced off',
    {
      refused,
    },
  );
}
