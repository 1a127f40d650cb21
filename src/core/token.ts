/**
 * API tokens and their scopes (issue 17; docs/decisions/0012-http-api-and-tokens.md). A token is a
 * random secret shown once and stored only as its sha256; it carries a scope and, for `agent` and
 * `host`, the one session or host it is bound to. What each scope may do is data here, judged by
 * one pure function, so the HTTP adapter and its tests read the same table.
 */
import type { SessionId } from './session.js';
import type { Instant } from './time.js';
import { InvalidInputError } from './errors.js';
import { canonical } from './validate.js';

export const SCOPES = ['viewer', 'agent', 'host', 'operator'] as const;
export type Scope = (typeof SCOPES)[number];

/** "an operator token", "a host token". */
export const scopeToken = (scope: string): string => `${/^[aeiou]/.test(scope) ? 'an' : 'a'} ${scope} token`;

/**
 * How a surface tells a token's bindings in a refusal's hint: the CLI by its flags (the default,
 * and the store's), the HTTP API by its body's fields (BINDING_FIELDS), never the other's.
 */
export interface BindingWords {
  readonly giveSession: string;
  readonly leaveSession: string;
  readonly giveHost: string;
  readonly leaveHost: string;
}
const BINDING_FLAGS: BindingWords = {
  giveSession: 'pass --session <id>',
  leaveSession: 'leave out --session',
  giveHost: 'pass --host <name>',
  leaveHost: 'leave out --host',
};
export const BINDING_FIELDS: BindingWords = {
  giveSession: 'give "session", the id of the session the token acts for',
  leaveSession: 'leave out "session"',
  giveHost: 'give "host", the name of the host the token acts for',
  leaveHost: 'leave out "host"',
};

/** A session for `agent` only and a host for `host` only, else InvalidInputError in the surface's words. */
export function checkBindings(
  scope: Scope,
  given: { readonly session: boolean; readonly host: boolean },
  words: BindingWords = BINDING_FLAGS,
): void {
  if (scope === 'agent' && !given.session) {
    throw new InvalidInputError('an agent token is bound to one session', words.giveSession);
  }
  if (scope !== 'agent' && given.session) {
    throw new InvalidInputError(`${scopeToken(scope)} is not bound to a session`, words.leaveSession);
  }
  if (scope === 'host' && !given.host) {
    throw new InvalidInputError('a host token is bound to one host', words.giveHost);
  }
  if (scope !== 'host' && given.host) {
    throw new InvalidInputError(`${scopeToken(scope)} is not bound to a host`, words.leaveHost);
  }
}

export interface Token {
  /** Public id, shown by `baton token list` and written in the ledger; never the secret. */
  readonly id: string;
  readonly scope: Scope;
  /** The session an `agent` token is bound to; null for other scopes. */
  readonly session: SessionId | null;
  /** The host a `host` token is bound to; null for other scopes. */
  readonly host: string | null;
  /**
   * The task of the run an `agent` token was minted for (`baton up`'s runner, one job attempt):
   * such a token acts on that task alone and takes no other work. Null for a token made without a run.
   */
  readonly task: string | null;
  readonly name: string | null;
  readonly createdAt: Instant;
  readonly expiresAt: Instant | null;
  readonly revokedAt: Instant | null;
  /**
   * Who revoked it, in words (`ann@box`, `token 0123456789ab`): the `by` of its `token:revoked` row,
   * kept on the token (migration 0047). Null while it is unrevoked, and for a revocation that named
   * nobody: a run's token revoked by its runner at the run's end, or one revoked before 0047 whose
   * ledger row was pruned.
   */
  readonly revokedBy: string | null;
  /**
   * A dashboard sign-in's token (http/login.ts): the id of the token presented at `POST /login`,
   * which minted this one for the browser's cookie. Null for every other token.
   */
  readonly loginOf: string | null;
}

/**
 * What verify answers: the token, or why the secret opens nothing; for a revoked or expired token
 * its id too, so that a use of it after its end is written to the ledger under it.
 */
export type TokenCheck =
  | { readonly ok: true; readonly token: Token }
  | {
      readonly ok: false;
      readonly reason: 'expired' | 'revoked';
      readonly id: string;
      /** A person revoked it (or, before revoked_by was kept, it was no run's token: no runner did). */
      readonly byPerson?: true;
    }
  | { readonly ok: false; readonly reason: 'unknown' | 'ended' };

/**
 * Everything a request may do, by kind. `own` actions name a session (or the session of a claim
 * or job) and are checked against an `agent` token's binding; `host` actions name a host.
 */
export const ACTIONS = [
  'read',
  'job:log',
  'task:add',
  'task:update',
  'session:start',
  'session:end',
  'claim',
  'heartbeat',
  'release',
  'effect:record',
  'progress:mark',
  'next',
  'escalate',
  'job:enqueue',
  'job:cancel',
  'job:retry',
  'job:prune',
  'job:run',
  'lifecycle',
  'host:toggle',
  'force-release',
  'token:manage',
  'settings',
  'workspace:manage',
] as const;
export type Action = (typeof ACTIONS)[number];

/** Each action in words, for a refusal: `a viewer token may not change a task's state`. */
export const ACTION_WORDS: Readonly<Record<Action, string>> = {
  read: 'read',
  'job:log': "read a job's output",
  'task:add': 'add tasks',
  'task:update': 'change a task',
  'session:start': 'start sessions',
  'session:end': 'end sessions',
  claim: 'claim tasks',
  heartbeat: 'heartbeat',
  release: 'release claims',
  'effect:record': 'record effects',
  'progress:mark': 'mark progress',
  next: 'take the next task',
  escalate: 'escalate tasks',
  'job:enqueue': 'enqueue jobs',
  'job:cancel': 'cancel jobs',
  'job:retry': 'retry jobs',
  'job:prune': 'prune jobs',
  'job:run': 'run jobs',
  lifecycle: "change a task's state, gate or dependencies",
  'host:toggle': 'enable or disable hosts',
  'force-release': 'force-release claims',
  'token:manage': 'manage tokens',
  settings: 'change settings',
  'workspace:manage': 'manage workspaces, agents and projects',
};

/** The table of the issue: what each scope may do. `operator` may do everything. */
export const SCOPE_ACTIONS: Readonly<Record<Scope, readonly Action[]>> = {
  viewer: ['read', 'job:log'],
  agent: [
    'read',
    'job:log',
    'claim',
    'heartbeat',
    'release',
    'effect:record',
    'progress:mark',
    'next',
    'escalate',
  ],
  host: ['read', 'session:start', 'session:end', 'heartbeat', 'job:run', 'progress:mark', 'effect:record'],
  operator: ACTIONS,
};

/**
 * Reads anyone may make without a token where reads are open (a loopback bind): reading a job's
 * output (`job:log`) is one, as the dashboard's job page shows it; with a token, an agent's reaches
 * its own job alone, since output may hold what another agent saw.
 */
export const OPEN_READS: readonly Action[] = ['read', 'job:log'];

/** Whom a request acts on, as far as the adapter knows it before acting. */
export interface Target {
  /** The session the request names or acts for (a body's `session`, a job's holder). */
  readonly session?: SessionId | null | undefined;
  /** The host the request names or whose session it acts for. */
  readonly host?: string | null | undefined;
  /** The task the request names (a claim's, an effect's, an escalation's key). */
  readonly key?: string | undefined;
}

/** A refusal's `fix`, when given, replaces the general one (ask an operator for a wider token). */
export type Verdict =
  { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly fix?: string };

/**
 * Whether the token may take the action on the target. An `agent` token acts only for its own
 * session, and one minted for a run only on that run's task, taking no other (`next`); a `host`
 * token only for its own host (and sessions on it). A dashboard sign-in's token (loginOf) manages no
 * tokens. Nothing else is consulted.
 */
export function authorize(
  token: Pick<Token, 'scope' | 'session' | 'host'> & {
    readonly task?: string | null;
    readonly loginOf?: string | null;
  },
  action: Action,
  target: Target = {},
): Verdict {
  if (action === 'token:manage' && (token.loginOf ?? null) !== null) {
    // Its cookie is seen by every page on the host's other ports: it must not mint what outlives it.
    return {
      ok: false,
      reason: 'a dashboard sign-in may not manage tokens',
      fix: `use the token it was made from (${String(token.loginOf)}) with \`baton token\``,
    };
  }
  if (!SCOPE_ACTIONS[token.scope].includes(action)) {
    const article = token.scope === 'agent' || token.scope === 'operator' ? 'an' : 'a';
    return { ok: false, reason: `${article} ${token.scope} token may not ${ACTION_WORDS[action]}` };
  }
  if (action === 'read' || token.scope === 'operator' || token.scope === 'viewer') return { ok: true };
  if (token.scope === 'agent') {
    if (target.session === undefined || target.session === null || target.session !== token.session) {
      const task = token.task ?? null;
      if (task !== null) {
        // A run's token: the rule is its run's task and job, whatever session the request named.
        const reason =
          `this agent token is bound to its run on ${task} (session ${String(token.session)}): ` +
          'it acts on that task and its job alone';
        return { ok: false, reason, fix: runFix(task) };
      }
      return {
        ok: false,
        reason: `this agent token is bound to session ${String(token.session)}, not ${describe(target.session)}`,
      };
    }
    return runReach(token.task ?? null, action, target);
  }
  if (target.host === undefined || target.host === null || canonical(target.host) !== token.host) {
    return {
      ok: false,
      reason: `this host token is bound to host ${String(token.host)}, not ${describe(target.host)}`,
    };
  }
  return { ok: true };
}

/**
 * A run's token (its session is the run's own) reaches the run's task alone: otherwise the agent
 * could claim any free task for its session and release it as done, or take more with `next`.
 */
function runReach(task: string | null, action: Action, target: Target): Verdict {
  if (task === null) return { ok: true };
  const fix = runFix(task);
  if (action === 'next') {
    return {
      ok: false,
      reason: `this agent token is bound to its run on ${task}: it takes no other task`,
      fix,
    };
  }
  // The asked key in NFC, as the coordinator will name it (validateKey): e + U+0301 is its run's é.
  // The bound key as stored: a run on a key stored before keys were NFC reaches no NFC twin of it.
  if (target.key !== undefined && canonical(target.key) !== task) {
    return { ok: false, reason: `this agent token is bound to its run on ${task}, not ${target.key}`, fix };
  }
  return { ok: true };
}

/** An agent is not sent looking for a wider token: its run is its task. */
function runFix(task: string): string {
  return `work on ${task} alone: finish it, or escalate it; other tasks get runs of their own`;
}

function describe(value: string | number | null | undefined): string {
  return value === undefined || value === null ? 'an unnamed one' : String(value);
}
