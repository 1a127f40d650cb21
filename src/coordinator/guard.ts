/**
 * The push guard: a git pre-push hook that refuses a push once the pushing claim is fenced off.
 * Hooks live in the repository's common hooks directory, shared by every worktree, so the claim a
 * worktree works under is recorded in that worktree's own git directory (`baton-claim.json`); the
 * BATON_SESSION, BATON_KEY and BATON_EPOCH the runner gives its agents take precedence over it.
 * A checkout with neither (the main checkout of a human) is not guarded.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeHookFile } from '../os/hook-file.js';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Holder } from '../core/claim.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import { withoutPassword } from '../core/redact.js';
import { validateEpoch, validateId, validateKey } from '../core/validate.js';
import { git, gitDirOf } from '../os/git.js';
import { absoluteDbUrl } from '../store/open.js';
import type { Coordinator } from './coordinator.js';

/** The per-worktree record, in the directory `git rev-parse --git-dir` names. */
const CLAIM_FILE = 'baton-claim.json';
/** The line that marks a pre-push hook as Baton's, so it may be replaced. */
const HOOK_MARKER = '# baton-guard:';

export interface GuardClaim {
  readonly session: number;
  readonly key: string;
  readonly epoch: number;
}

/** A claim and where it came from; db is null when the source did not name a database. */
export interface GuardContext {
  readonly claim: GuardClaim;
  readonly db: string | null;
  readonly source: 'env' | 'file';
}

/**
 * Why a push is refused: the claim moved on, was released, its session ended, or never existed;
 * or, asked over the API, the API no longer accepts the run's token (its run has ended).
 */
type Refusal = 'moved' | 'released' | 'session_ended' | 'never_granted' | 'token_refused';

export type GuardVerdict =
  | { readonly ok: true; readonly claim: GuardClaim }
  | {
      readonly ok: false;
      readonly reason: Refusal;
      readonly claim: GuardClaim;
      /** Who holds the task now, if anyone. */
      readonly current: Holder | null;
      /** Why, in words: `the claim on K moved to epoch N held by session S on H`. */
      readonly why: string;
    };

export function parseGuardClaim(input: { session: unknown; key: unknown; epoch: unknown }): GuardClaim {
  return {
    session: validateId('session', input.session),
    key: validateKey(input.key),
    epoch: validateEpoch(input.epoch),
  };
}

/** The claim in BATON_SESSION, BATON_KEY and BATON_EPOCH, when all three are set. */
function claimFromEnv(env: NodeJS.ProcessEnv): GuardContext | null {
  const [session, key, epoch] = [env['BATON_SESSION'], env['BATON_KEY'], env['BATON_EPOCH']];
  if (!session || !key || !epoch) return null;
  const db = env['BATON_DB'];
  return { claim: parseGuardClaim({ session, key, epoch }), db: db ? db : null, source: 'env' };
}

/** The claim recorded for the worktree at `dir` by `baton guard install`, or null. */
async function claimFromWorktree(dir: string): Promise<GuardContext | null> {
  const file = join(await gitDirOf(dir, 'worktree'), CLAIM_FILE);
  if (!existsSync(file)) return null;
  let raw: { session?: unknown; key?: unknown; epoch?: unknown; db?: unknown };
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as typeof raw;
  } catch (error) {
    throw new InvalidInputError(
      `${file} is not valid JSON (${String(error)})`,
      'run `baton guard install` again',
    );
  }
  const db = typeof raw.db === 'string' && raw.db !== '' ? raw.db : null;
  return {
    claim: parseGuardClaim({ session: raw.session, key: raw.key, epoch: raw.epoch }),
    db,
    source: 'file',
  };
}

/** The environment's claim if it names one, else the worktree's; null when neither does. */
export async function guardContext(dir: string, env: NodeJS.ProcessEnv): Promise<GuardContext | null> {
  const fromEnv = claimFromEnv(env);
  if (fromEnv === null) return claimFromWorktree(dir);
  if (fromEnv.db !== null) return fromEnv;
  // An agent reaching Baton over HTTP holds no BATON_DB: the database is the one the runner
  // recorded for this worktree (its 0600 claim record, no password).
  const recorded = await claimFromWorktree(dir).catch(() => null);
  return { ...fromEnv, db: recorded?.db ?? null };
}

/** What the guard asks: the Coordinator on the database, or the HTTP API with the agent's token. */
export type GuardApi = Pick<Coordinator, 'getSession' | 'showTask'>;

/** Whether (session, epoch) is still the task's live claim, and if not, who has it now. */
export async function checkGuard(baton: GuardApi, claim: GuardClaim): Promise<GuardVerdict> {
  const { key, epoch } = claim;
  const session = await baton.getSession(claim.session);
  const { task, claim: live, holder } = await baton.showTask(key);
  const mine = live !== null && live.session === claim.session && live.epoch === epoch;
  if (mine && session.state === 'live') return { ok: true, claim };
  const refused = (reason: Refusal, why: string): GuardVerdict => ({
    ok: false,
    reason,
    claim,
    current: holder,
    why,
  });
  // Epochs only grow: one past the newest grant was never held by anyone (issue 14, item 12).
  if (epoch > task.epoch) {
    const now =
      live !== null && holder !== null
        ? `its live claim is at epoch ${live.epoch}, held by session ${live.session} on ${holder.host}`
        : `the newest claim ever granted on it is epoch ${task.epoch}`;
    return refused('never_granted', `epoch ${epoch} was never granted on ${key}: ${now}`);
  }
  if (live !== null && holder !== null && !mine) {
    const to = `epoch ${live.epoch} held by session ${live.session} on ${holder.host}`;
    return refused('moved', `the claim on ${key} moved to ${to}`);
  }
  if (session.state !== 'live') {
    const gone = `its claim on ${key} at epoch ${epoch} is gone`;
    return refused('session_ended', `session ${session.id} is ${session.state}, so ${gone}`);
  }
  return refused(
    'released',
    `the claim on ${key} at epoch ${epoch} is no longer live and no one holds the task now`,
  );
}

/** A database URL that means the same from any directory: a relative SQLite path made absolute. */
/** A database URL that means the same from any directory. */
export const absoluteDb = absoluteDbUrl;

export interface GuardInstallParams {
  /** Any directory inside the worktree. */
  readonly dir: string;
  readonly claim: GuardClaim;
  /** Recorded with the claim, without its password; make it absolute first (absoluteDb). */
  readonly db: string;
  /** Absolute paths of the node binary and of bin/baton.js, which the hook runs. */
  readonly node: string;
  readonly batonBin: string;
}

export interface GuardInstallResult {
  readonly hook: string;
  readonly claimFile: string;
  /** false when a Baton hook was there already and was rewritten. */
  readonly created: boolean;
}

/**
 * The pre-push hook: runs `baton guard check` in the worktree that pushes. It names no database
 * and holds no credential: the database comes from BATON_DB or the 0600 claim record, and its
 * password, if any, from PGPASSFILE or PGPASSWORD. Under a runner the hook first moves itself
 * into the job's hook cgroup (BATON_HOOK_CGROUPS), so the check, a Node process of about 55 MB,
 * does not count against the agent's RAM budget and is not OOM-killed with it; where there are no
 * cgroups, BATON_HOOK marks it for the runner, which leaves it out of the sum.
 */
function hookScript(params: Pick<GuardInstallParams, 'node' | 'batonBin'>): string {
  const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    `${HOOK_MARKER} installed by \`baton guard install\`. Refuses a push once the claim this worktree`,
    '# works under is fenced off. The claim comes from BATON_SESSION/BATON_KEY/BATON_EPOCH, else from',
    `# ${CLAIM_FILE} in the worktree's git directory; a checkout with neither is not guarded.`,
    'for procs in $BATON_HOOK_CGROUPS; do echo $$ > "$procs"; done 2>/dev/null',
    'BATON_HOOK=pre-push exec ' + `${quote(params.node)} ${quote(params.batonBin)} guard check`,
    '',
  ].join('\n');
}

/**
 * Records the claim in the worktree's git directory and writes the pre-push hook into the hooks
 * directory git uses for it (the common one, or core.hooksPath). Refuses to replace a hook that is
 * not Baton's. The caller checks first that the claim is current (checkGuard).
 */
export async function installGuard(params: GuardInstallParams): Promise<GuardInstallResult> {
  const dir = resolve(params.dir);
  const gitDir = await gitDirOf(dir, 'worktree');
  const hooks = resolve(dir, await git(['rev-parse', '--git-path', 'hooks'], { cwd: dir }));
  mkdirSync(hooks, { recursive: true });
  const hook = join(hooks, 'pre-push');
  const existing = existsSync(hook) ? readFileSync(hook, 'utf8') : null;
  if (existing !== null && !existing.includes(HOOK_MARKER)) {
    throw new ConflictError(
      `${hook} exists and is not Baton's`,
      `add this line to it yourself: ${JSON.stringify(params.node)} ${JSON.stringify(params.batonBin)} guard check`,
    );
  }
  const claimFile = join(gitDir, CLAIM_FILE);
  const record = {
    db: withoutPassword(params.db),
    session: params.claim.session,
    key: params.claim.key,
    epoch: params.claim.epoch,
  };
  writeFileSync(claimFile, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  chmodSync(claimFile, 0o600);
  writeHookFile(hook, hookScript(params));
  return { hook, claimFile, created: existing === null };
}

/** bin/baton.js of this installation, which the hook runs by its absolute path. */
export function installedBatonBin(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const bin = join(dir, 'bin', 'baton.js');
    if (existsSync(bin)) return bin;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no bin/baton.js above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}
