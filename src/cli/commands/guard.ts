/**
 * `baton guard install | check`: a git pre-push hook that refuses a push from a worktree whose
 * claim is no longer current (and a commit-msg hook that stamps each commit with the claim).
 * `install` records the claim in the worktree and writes the hooks; `check`, which the hook runs,
 * exits 0 while the claim is current and 3 once it is fenced off.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { Coordinator } from '../../coordinator/coordinator.js';
import {
  installedBatonBin,
  absoluteDb,
  checkGuard,
  guardContext,
  installGuard,
  parseGuardClaim,
  type GuardClaim,
  type GuardVerdict,
} from '../../coordinator/guard.js';
import { installCommitTrailers } from '../../coordinator/commit-trailers.js';
import { InvalidInputError } from '../../core/errors.js';
import { openStore, parseDbUrl } from '../../store/open.js';
import { projectDb } from '../../store/project.js';
import { Output } from '../output.js';
import { remoteTarget, type RemoteTarget } from '../remote-target.js';
import { ApiConnection, fromWire } from '../../agents/api-connection.js';
import { registerGuardServer } from './guard-server.js';
import { Refusal } from '../refusal.js';
import { dbUrl, type GlobalOptions } from '../run.js';

interface InstallOptions {
  readonly dir?: string;
  readonly session?: string;
  readonly key?: string;
  readonly epoch?: string;
}

interface CheckOptions {
  readonly dir?: string;
  readonly defaultDb?: string;
}

export function registerGuard(program: Command): void {
  const guard = program
    .command('guard')
    .description('refuse git pushes from a worktree whose claim was fenced off (a pre-push hook)');
  guard
    .command('install')
    .description("record a worktree's claim and write the pre-push hook that checks it")
    .option('--dir <worktree>', 'the worktree (default: the current directory)')
    .option('--session <id>', "the claim's session (default $BATON_SESSION)")
    .option('--key <key>', "the claim's task (default $BATON_KEY)")
    .option('--epoch <n>', "the claim's epoch (default $BATON_EPOCH)")
    .action((options: InstallOptions, cmd: Command) => install(options, cmd));
  guard
    .command('check')
    .description("exit 0 while the worktree's claim is current, 3 once it is fenced off (the hook runs this)")
    .option('--dir <worktree>', 'the worktree (default: the current directory)')
    .option('--default-db <url>', 'the database when neither --db nor the source of the claim names one')
    .action((options: CheckOptions, cmd: Command) => check(options, cmd));
  registerGuardServer(guard);
}

async function install(options: InstallOptions, cmd: Command): Promise<void> {
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const env = process.env;
  const raw = {
    session: options.session ?? env['BATON_SESSION'],
    key: options.key ?? env['BATON_KEY'],
    epoch: options.epoch ?? env['BATON_EPOCH'],
  };
  if (!raw.session || !raw.key || !raw.epoch) {
    throw new InvalidInputError(
      'guard install needs the claim it guards',
      'give --session, --key and --epoch, or set BATON_SESSION, BATON_KEY and BATON_EPOCH',
    );
  }
  const claim = parseGuardClaim(raw);
  const dir = resolve(options.dir ?? '.');
  const db = absoluteDb(dbUrl(globals), process.cwd());
  const out = new Output(globals.json === true);
  await withBaton(db, async (baton) => {
    const verdict = await checkGuard(baton, claim);
    if (!verdict.ok) throw fencedRefusal(verdict, `nothing to guard: ${verdict.why}`, 'claim the task first');
    const result = await installGuard({
      dir,
      claim,
      db,
      node: process.execPath,
      batonBin: installedBatonBin(),
    });
    // Commit provenance (commit-trailers.ts): every commit here carries the claim's Baton-* trailers.
    const { host } = await baton.getSession(claim.session);
    const stamp = await installCommitTrailers(dir, { ...claim, host });
    out.result({ ...result, commitMsgHook: stamp.hook, dir, db, ...claim }, () => [
      `guarding pushes from ${dir}: session ${claim.session} holds ${claim.key} at epoch ${claim.epoch}`,
      `${result.created ? 'wrote' : 'rewrote'} ${result.hook}`,
      `${stamp.created ? 'wrote' : 'rewrote'} ${stamp.hook} (Baton-* trailers on every commit)`,
    ]);
  });
}

async function check(options: CheckOptions, cmd: Command): Promise<void> {
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const dir = resolve(options.dir ?? '.');
  const context = await guardContext(dir, process.env);
  const out = new Output(globals.json === true);
  if (context === null) {
    // Not a Baton worktree (the hook is shared by every checkout of the repository): not guarded.
    out.result({ ok: true, guarded: false, dir }, () => []);
    return;
  }
  // An agent without database credentials (BATON_URL and BATON_TOKEN) asks the API with its own
  // token and never opens the database; a token the API no longer accepts (its run has ended,
  // token-store.ts TokenRun) refuses the push like a fenced claim.
  const target = remoteTarget(globals, process.env);
  const verdict =
    target === null
      ? await withBaton(globals.db ?? context.db ?? options.defaultDb ?? projectDb(process.cwd()), (baton) =>
          checkGuard(baton, context.claim),
        )
      : await checkOverApi(target, context.claim);
  if (!verdict.ok) throw fencedRefusal(verdict, `push refused: ${verdict.why}`, 'your work is fenced off');
  const { session, key, epoch } = context.claim;
  out.result(
    {
      ok: true,
      guarded: true,
      dir,
      source: context.source,
      via: target === null ? 'db' : 'api',
      ...context.claim,
    },
    () => `push allowed: session ${session} holds ${key} at epoch ${epoch}`,
  );
}

async function checkOverApi(target: RemoteTarget, claim: GuardClaim): Promise<GuardVerdict> {
  const api = new ApiConnection(target.url, target.token);
  const path = `/v1/claims/${encodeURIComponent(claim.key)}/guard?session=${claim.session}&epoch=${claim.epoch}`;
  const answer = await api.ask('GET', path);
  if (answer.ok) return fromWire<GuardVerdict>(answer.body);
  if (answer.refusal.status !== 401) throw answer.refusal;
  const why = `Baton's API no longer accepts this run's token: ${answer.refusal.message}`;
  return { ok: false, reason: 'token_refused', claim, current: null, why };
}

function fencedRefusal(verdict: Exclude<GuardVerdict, { ok: true }>, message: string, hint: string): Refusal {
  const claim: GuardClaim = verdict.claim;
  return new Refusal('fenced', 'fenced', message, hint, {
    ...claim,
    reason: verdict.reason,
    current: verdict.current,
  });
}

/** Opens the named database, never creating one: a missing SQLite file is a wrong path, not a new cluster. */
async function withBaton<T>(db: string, work: (baton: Coordinator) => Promise<T>): Promise<T> {
  const target = parseDbUrl(db);
  if (target.engine === 'sqlite' && !existsSync(target.path)) {
    throw new InvalidInputError(
      `the database ${target.path} does not exist`,
      'pass --db, or set BATON_DB, to the database the claim was made in',
    );
  }
  const store = await openStore(db, { intent: 'use' });
  try {
    return await work(new Coordinator(store));
  } finally {
    await store.close();
  }
}
