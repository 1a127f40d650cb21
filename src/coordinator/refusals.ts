/**
 * Refusals built from returned outcomes (held, fenced, lost). The store reports these as values;
 * the adapters turn them into an exit code (CLI) or a status (HTTP) like any thrown BatonError,
 * with the same message and hint, and keep the outcome's facts (who holds it now) as details.
 */
import type { Holder } from '../core/claim.js';
import type { SessionId } from '../core/session.js';
import { BatonError, type ErrorCode, type WorkspaceConfigurationError } from '../core/errors.js';

export class Refusal extends BatonError {
  override readonly name = 'Refusal';

  constructor(
    readonly code: ErrorCode,
    /** The `error` field of the CLI's JSON object and the HTTP code; `held` is more telling than `conflict`. */
    readonly label: string,
    message: string,
    hint: string,
    /** Extra fields for the JSON object, such as the holder. */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message, hint);
  }
}

/** Who holds a thing, in words: `session 7 on build-3 since 2025-…Z (epoch 3)`. */
export function describeHolder(holder: Holder): string {
  const { session, host, since, epoch } = holder;
  return `session ${session} on ${host} since ${new Date(since).toISOString()} (epoch ${epoch})`;
}

export function heldRefusal(key: string, holder: Holder): Refusal {
  return new Refusal(
    'conflict',
    'held',
    `${key} is held by ${describeHolder(holder)}`,
    'pick another task, or wait until it is released',
    { key, holder },
  );
}

/**
 * Why the claim (key, epoch) is not current, in the words every adapter uses: the CLI and the
 * HTTP API (fencedRefusal), the MCP tools and the Claude Code hooks (agents/messages.ts). The live
 * claim is always the newest grant, so against it an epoch tells apart one never granted (newer),
 * one granted to another session (the same) and one fenced off (older); with no live claim the
 * newest epoch is not at hand, and the words hold either way. A session that has ended (or was
 * rescued) is said first: whatever the epoch, nothing it presents is current any more.
 */
export function fencedReason(
  key: string,
  epoch: string | number,
  current: Holder | null,
  sessionEnded = false,
  caller?: SessionId | null,
): string {
  const claim = `the claim on ${key} at epoch ${epoch}`;
  if (sessionEnded) {
    const now = current === null ? `no one holds ${key} now` : `${key} is held by ${describeHolder(current)}`;
    return `${claim} is not current: its session has ended, and ${now}`;
  }
  if (current === null) return `${claim} is not current: no one holds it now`;
  if (callersOwn(current, caller, epoch) !== null) return wrongEpochReason(key, epoch, current);
  const holder = describeHolder(current);
  const presented = Number(epoch);
  if (isNeverGranted(presented, current))
    return `epoch ${epoch} was never granted for ${key}: it is held by ${holder}`;
  if (presented === current.epoch) return `${claim} is not this session's: it is held by ${holder}`;
  return `${claim} is no longer current: it is now held by ${holder}`;
}

/**
 * Whether the live claim is the caller's own and the epoch it gave was never granted (above the
 * claim's): a typo, not a fence. The session holds the task, and claiming it again would answer
 * that epoch anyway (a claim is idempotent for its holder), so it is told the epoch to use
 * (docs/decisions/0059). A lower epoch is a claim of its that ended (expired, force-released,
 * released) before it claimed again, maybe after another session held the task: work done under
 * it may be overlapped, so that stays a fence.
 */
export function callersOwn(
  current: Holder | null,
  caller: SessionId | null | undefined,
  epoch: string | number,
): Holder | null {
  const own = current !== null && caller !== undefined && caller !== null && current.session === caller;
  return own && isNeverGranted(Number(epoch), current) ? current : null;
}

/** The caller holds the task at a lower epoch than it gave. */
function wrongEpochReason(key: string, epoch: string | number, current: Holder): string {
  const since = new Date(current.since).toISOString();
  return (
    `epoch ${epoch} was never granted for ${key}: you hold ${key} at epoch ${current.epoch} ` +
    `(session ${current.session} on ${current.host} since ${since}); use that epoch`
  );
}

function isNeverGranted(presented: number, current: Holder): boolean {
  return Number.isInteger(presented) && presented > current.epoch;
}

/** The claim (key, epoch) is not current (fencedReason): says who holds the task now, if anyone. */
export function fencedRefusal(
  key: string,
  epoch: string,
  current: Holder | null,
  sessionEnded = false,
  caller?: SessionId | null,
): Refusal {
  const details = { key, epoch: Number(epoch), current, ...(sessionEnded ? { sessionEnded } : {}) };
  const reason = fencedReason(key, epoch, current, sessionEnded, caller);
  const own = sessionEnded ? null : callersOwn(current, caller, epoch);
  if (own !== null) {
    const hint = `nothing changed; give epoch ${own.epoch}, your claim's, and carry on`;
    return new Refusal('fenced', 'fenced', reason, hint, details);
  }
  let hint = 'stop working on it; claim it again if you still need it';
  // No holder: released, expired, or ended by a close or completion, which a claim would refuse.
  if (current === null)
    hint = `stop working on it; \`baton task show ${key}\` says why (a closed or done task is reopened first)`;
  if (sessionEnded) hint = 'stop working on it; start a new session to claim it again if you still need it';
  else if (current !== null && isNeverGranted(Number(epoch), current)) {
    hint = 'give the epoch your claim printed (`baton claim`, `baton next`); claim it first if you hold none';
  }
  return new Refusal('fenced', 'fenced', reason, hint, details);
}

/** A force-release with no live claim to end: nothing changed. */
export function noClaimRefusal(key: string): Refusal {
  return new Refusal(
    'not_found',
    'no_claim',
    `${key} has no live claim`,
    `nothing to release; see who holds what with \`baton task show ${key}\``,
    { key },
  );
}

/**
 * `WORKSPACE_UNRESOLVED` with its cause and its fix: exit 2 (HTTP 422), one line, and as JSON
 * `{"error": "WORKSPACE_UNRESOLVED", "cause": …, "fix": …, "key": …, …}`.
 */
export function unresolvedRefusal(error: WorkspaceConfigurationError): Refusal {
  const fix = error.hint ?? '';
  return new Refusal('workspace_unresolved', 'WORKSPACE_UNRESOLVED', error.message, fix, {
    cause: error.message,
    fix,
    key: error.key,
    agent: error.agent,
    project: error.project,
  });
}

/**
 * `next` found nothing eligible: says which open tasks wait for a gate (their key and gate in
 * the hint, the tasks themselves in details.gated).
 */
export function noEligibleRefusal(
  gated: readonly { readonly key: string; readonly gate: string | null }[],
): Refusal {
  const waiting = gated.map((task) => `${task.key}: waiting for ${task.gate ?? 'design'} approval`);
  return new Refusal(
    'not_found',
    'not_found',
    'no eligible task: nothing open is free',
    waiting.join('; ') || 'add or reopen a task',
    { gated },
  );
}

/**
 * What `baton release --outcome done` of a run's own claim answers (the CLI, commands/claim.ts, and
 * the server for a run's token, http/claims.ts): the claim was checked and kept for the runner.
 */
export const keptForRunnerLine = (key: string): string =>
  `nothing released: baton up's runner holds ${key} for this run and records it done when your ` +
  'command exits with status 0; exit now';
