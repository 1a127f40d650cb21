/**
 * The enforcing guard: a `pre-receive` hook in the shared (bare) repository that refuses a push to
 * a task's branch unless it comes under the task's live claim. The client-side pre-push hook is
 * advisory (`git push --no-verify` skips it); this one runs on the server, where the pusher has no
 * say.
 *
 * How a push names its claim, first match wins:
 * 1. push options: `git push -o baton-key=K -o baton-epoch=N [-o baton-session=S]`, which `baton up`
 *    also sets for its agents' git (push.pushOption, daemon/agent-push-options.ts);
 * 2. trailers of the pushed commit: `Baton-Task: K`, `Baton-Epoch: N` (and `Baton-Session: S`).
 * The branch must be the task's (`baton/<slug>`, os/worktree.ts), so a claim on one task does not
 * open another's branch. The claim must be live at that epoch (and session, when named), judged by
 * the database at push time. A protected ref with no claim named, an unreachable database, or a
 * stale epoch is refused: the hook fails closed. Refs outside the protected patterns pass.
 *
 * What this proves: the pusher names the task's current epoch. An epoch is not a secret (anyone
 * who can read the database can learn it), so this stops stale and fenced-off work, including
 * `--no-verify` pushes and pushes from a copied worktree, not a pusher who lies on purpose. A
 * token closes that: the push option `baton-token=<secret>` (an agent's BATON_TOKEN, which `baton up`
 * gives its agents' git in their environment, never on a command line: TOKEN_FIX) is checked when sent, and
 * with `server-install --require-token` a protected push without one is refused. It must open
 * (not revoked, expired, nor past its session or run) and be the holder's: an agent token bound to
 * the claim's session, or an operator's. Never read from commit trailers: a secret in a commit
 * would be pushed with it.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BatonError, ConflictError, InvalidInputError, StoreUnavailableError } from '../core/errors.js';
import { withoutPassword } from '../core/redact.js';
import { validateEpoch, validateId, validateKey } from '../core/validate.js';
import { git } from '../os/git.js';
import { branchForKey } from '../os/worktree.js';
import type { Coordinator } from './coordinator.js';
import { checkGuard } from './guard.js';

/** The server hook's settings, kept (0600, no password) in the bare repository. */
export const SERVER_CONFIG_FILE = 'baton-guard.json';
const SERVER_HOOK_MARKER = '# baton-guard-server:';
export const DEFAULT_PROTECTED = ['refs/heads/baton/*'];

/**
 * `--protect` patterns: full ref names (`*` matches any characters), as git checks a ref's name. A
 * pattern that can match no ref (empty, `baton/*` without `refs/heads/`) would turn the guard off
 * without a word, so it is refused.
 */
export function validateProtectPatterns(patterns: readonly string[]): readonly string[] {
  for (const pattern of patterns) {
    const ref = /^refs\/[^\s~^:?[\\\x00-\x1f\x7f]+$/.test(pattern);
    if (!ref || pattern.includes('..') || pattern.includes('//') || /[/.]$/.test(pattern)) {
      throw new InvalidInputError(
        `--protect ${JSON.stringify(pattern)} is not a ref pattern, so it would protect nothing`,
        'write a full ref name such as refs/heads/baton/* (a * matches any characters)',
      );
    }
  }
  return patterns;
}
const ZERO = /^0+$/;

export interface ServerConfig {
  readonly db: string;
  readonly protect: readonly string[];
  /** Whether a protected push must carry the holder's token (the push option `baton-token=`). */
  readonly requireToken?: boolean;
}

export interface RefUpdate {
  readonly oldSha: string;
  readonly newSha: string;
  readonly ref: string;
}

export interface RefVerdict {
  readonly ref: string;
  readonly ok: boolean;
  readonly why: string;
  /** A refusal's next step: fenced off only when the claim named is stale, else how to push. */
  readonly fix?: string;
}

const FENCED = 'your work is fenced off';
/**
 * Never `-o baton-token=…` nor `git -c`: a command line is readable by every user of the machine
 * (/proc/<pid>/cmdline), so a sibling agent of another uid would take the token. `baton up` gives
 * its agents' git the token in their environment (daemon/agent-push-options.ts).
 */
const TOKEN_FIX =
  "send the holder's token from its environment, never a command line: `baton up` gives its agents' " +
  "git it (push.pushOption; a push's own -o options replace it); elsewhere export GIT_CONFIG_COUNT=1 " +
  'GIT_CONFIG_KEY_0=push.pushOption GIT_CONFIG_VALUE_0="baton-token=$BATON_TOKEN" first; or an operator\'s';

export function readServerConfig(repo: string): ServerConfig {
  const file = join(repo, SERVER_CONFIG_FILE);
  if (!existsSync(file)) {
    throw new InvalidInputError(
      `${file} is missing`,
      'run `baton guard server-install` on this repository again',
    );
  }
  const raw = JSON.parse(readFileSync(file, 'utf8')) as {
    db?: unknown;
    protect?: unknown;
    requireToken?: unknown;
  };
  const protect = Array.isArray(raw.protect)
    ? raw.protect.filter((pattern): pattern is string => typeof pattern === 'string')
    : [];
  if (typeof raw.db !== 'string') throw new InvalidInputError(`${file} names no database`);
  return {
    db: raw.db,
    protect: protect.length > 0 ? protect : DEFAULT_PROTECTED,
    requireToken: raw.requireToken === true,
  };
}

/** `<old> <new> <ref>` lines, as git gives them to pre-receive on stdin. */
export function parseRefUpdates(text: string): RefUpdate[] {
  return text
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length === 3)
    .map(([oldSha = '', newSha = '', ref = '']) => ({ oldSha, newSha, ref }));
}

/** A glob over refs where `*` matches anything, `/` included. */
function isProtected(ref: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) =>
    new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(ref),
  );
}

/** The push options git hands the hook (GIT_PUSH_OPTION_COUNT, GIT_PUSH_OPTION_<i>). */
function pushOptions(env: NodeJS.ProcessEnv): Map<string, string> {
  const out = new Map<string, string>();
  const count = Number(env['GIT_PUSH_OPTION_COUNT'] ?? 0);
  for (let index = 0; index < count; index++) {
    const option = env[`GIT_PUSH_OPTION_${index}`] ?? '';
    const eq = option.indexOf('=');
    if (eq > 0) out.set(option.slice(0, eq), option.slice(eq + 1));
  }
  return out;
}

/** Baton-Task, Baton-Epoch and Baton-Session trailers of the commit's message. */
async function commitTrailers(
  repo: string,
  sha: string,
  env: NodeJS.ProcessEnv,
): Promise<Map<string, string>> {
  // Pushed objects sit in quarantine until the hook accepts them: read them where git says.
  const extra: Record<string, string> = {};
  for (const name of ['GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_QUARANTINE_PATH']) {
    const value = env[name];
    if (value !== undefined) extra[name] = value;
  }
  const message = await git(['log', '-1', '--format=%B', sha], { cwd: repo, env: extra });
  const out = new Map<string, string>();
  for (const match of message.matchAll(/^Baton-(Task|Epoch|Session):[ \t]*(.+?)[ \t]*$/gim)) {
    out.set(
      `baton-${(match[1] ?? '').toLowerCase() === 'task' ? 'key' : (match[1] ?? '').toLowerCase()}`,
      match[2] ?? '',
    );
  }
  return out;
}

/**
 * Why the push's token does not speak for the claim's holder, or null when it does (or when
 * none was sent and none is required).
 */
async function tokenRefusal(
  baton: Coordinator,
  secret: string | undefined,
  required: boolean,
  holder: number,
): Promise<string | null> {
  if (secret === undefined || secret === '') {
    return required ? "this repository needs the holder's token" : null;
  }
  const check = await baton.tokens.verify(secret, 'git push (baton guard receive)');
  if (!check.ok) {
    return check.reason === 'ended'
      ? "the push's token has ended (its session or run is over)"
      : `the push's token is ${check.reason}`;
  }
  const { token } = check;
  // A dashboard sign-in's token (http/login.ts) opens the dashboard by its cookie, and nothing else.
  if (token.loginOf !== null)
    return `the push's token ${token.id} is a dashboard sign-in's, not one for pushes`;
  if (token.scope === 'operator' || (token.scope === 'agent' && token.session === holder)) return null;
  const whose = token.session === null ? token.scope : `${token.scope}, session ${token.session}`;
  return `the push's token (${whose}) is not the holder's (session ${holder})`;
}

/** The verdict on one ref update, given what the push says of its claim. */
async function judgeRef(
  baton: Coordinator,
  update: RefUpdate,
  named: Map<string, string>,
  from: string,
  token: { readonly secret: string | undefined; readonly required: boolean },
): Promise<RefVerdict> {
  const { ref } = update;
  const key = named.get('baton-key');
  const epoch = named.get('baton-epoch');
  if (key === undefined || epoch === undefined) {
    return {
      ref,
      ok: false,
      why: 'the push names no claim',
      fix:
        'push with -o baton-key=<key> -o baton-epoch=<epoch>, ' +
        'or commit with Baton-Task and Baton-Epoch trailers',
    };
  }
  const claim = { key: validateKey(key), epoch: validateEpoch(epoch) };
  const branch = `refs/heads/${branchForKey(claim.key)}`;
  if (ref !== branch) {
    const why = `${ref} is not the branch of ${claim.key} (${branch})`;
    return { ref, ok: false, why, fix: `push to ${branch}: git push origin HEAD:${branch}` };
  }
  const { claim: live, holder } = await baton.showTask(claim.key);
  if (live === null || live.epoch !== claim.epoch) {
    const now =
      live === null ? 'no one holds it now' : `it is at epoch ${live.epoch}, held by session ${live.session}`;
    const why = `the claim on ${claim.key} at epoch ${claim.epoch} is fenced off: ${now}`;
    return { ref, ok: false, why, fix: FENCED };
  }
  const session = named.get('baton-session');
  if (session !== undefined) {
    const verdict = await checkGuard(baton, {
      session: validateId('session', session),
      key: claim.key,
      epoch: claim.epoch,
    });
    if (!verdict.ok) return { ref, ok: false, why: verdict.why, fix: FENCED };
  }
  const refused = await tokenRefusal(baton, token.secret, token.required, live.session);
  if (refused !== null) return { ref, ok: false, why: refused, fix: TOKEN_FIX };
  return {
    ref,
    ok: true,
    why:
      `claim on ${claim.key} at epoch ${claim.epoch} (${from}) is current, ` +
      `held by session ${live.session} on ${holder?.host ?? '?'}`,
  };
}

/** Judges every protected ref of a push; unprotected refs pass without a look. */
export async function judgePush(
  baton: Coordinator,
  repo: string,
  config: ServerConfig,
  updates: readonly RefUpdate[],
  env: NodeJS.ProcessEnv,
): Promise<RefVerdict[]> {
  const options = pushOptions(env);
  const out: RefVerdict[] = [];
  for (const update of updates) {
    if (!isProtected(update.ref, config.protect)) continue;
    const deleting = ZERO.test(update.newSha);
    let named = options;
    let from = 'push options';
    if (!options.has('baton-key') && !deleting) {
      named = await commitTrailers(repo, update.newSha, env);
      from = 'commit trailers';
    }
    try {
      const token = { secret: options.get('baton-token'), required: config.requireToken === true };
      out.push(await judgeRef(baton, update, named, from, token));
    } catch (error) {
      // An unknown task, a malformed epoch: a refusal of this ref. An unreachable database
      // propagates, and the hook's failure refuses the whole push.
      if (!(error instanceof BatonError) || error instanceof StoreUnavailableError) throw error;
      const fix = error.hint ?? 'name the claim you hold with -o baton-key= and -o baton-epoch=';
      out.push({ ref: update.ref, ok: false, why: error.message, fix });
    }
  }
  return out;
}

export interface ServerInstallParams {
  /** The bare repository pushes go to. */
  readonly repo: string;
  /** Recorded without its password; the hook's user supplies it (PGPASSFILE, PGPASSWORD). */
  readonly db: string;
  readonly protect: readonly string[];
  readonly requireToken: boolean;
  readonly node: string;
  readonly batonBin: string;
}

/** The pre-receive hook: hands the pushed refs to `baton guard receive`. */
function serverHookScript(params: Pick<ServerInstallParams, 'node' | 'batonBin'>): string {
  const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    `${SERVER_HOOK_MARKER} installed by \`baton guard server-install\`. Refuses a push to a task's`,
    `# branch unless it names the task's live claim (push options or commit trailers); see ${SERVER_CONFIG_FILE}.`,
    `exec ${quote(params.node)} ${quote(params.batonBin)} guard receive`,
    '',
  ].join('\n');
}

/**
 * Writes the pre-receive hook and its settings into a bare repository and lets clients send push
 * options. Refuses a repository that is not bare, and a pre-receive hook that is not Baton's.
 */
export async function installServerGuard(
  params: ServerInstallParams,
): Promise<{ hook: string; config: string }> {
  const bare = await git(['rev-parse', '--is-bare-repository'], { cwd: params.repo }).catch(() => 'false');
  if (bare !== 'true') {
    throw new InvalidInputError(
      `${params.repo} is not a bare git repository`,
      'give the repository pushes go to',
    );
  }
  const hooks = resolve(params.repo, await git(['rev-parse', '--git-path', 'hooks'], { cwd: params.repo }));
  mkdirSync(hooks, { recursive: true });
  const hook = join(hooks, 'pre-receive');
  if (existsSync(hook) && !readFileSync(hook, 'utf8').includes(SERVER_HOOK_MARKER)) {
    throw new ConflictError(
      `${hook} exists and is not Baton's`,
      `call this from it, passing its stdin on: ${JSON.stringify(params.node)} ` +
        `${JSON.stringify(params.batonBin)} guard receive`,
    );
  }
  const config = join(params.repo, SERVER_CONFIG_FILE);
  const record: ServerConfig = {
    db: withoutPassword(params.db),
    protect: params.protect,
    requireToken: params.requireToken,
  };
  writeFileSync(config, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  chmodSync(config, 0o600);
  writeFileSync(hook, serverHookScript(params), { mode: 0o755 });
  chmodSync(hook, 0o755);
  await git(['config', 'receive.advertisePushOptions', 'true'], { cwd: params.repo });
  return { hook, config };
}
