/**
 * What one issue seen on GitHub (by a sync page, a webhook or a re-check) does to its task, by
 * key, so applying it twice changes nothing the second time:
 *
 *   issue open,  no task        → added (the vague-issue rule applies; `needs-design-review` gates it)
 *   issue open,  task open      → title, body, URL and labels kept up to date; the gate label
 *                                  newly seen gates it
 *   issue open,  task closed/done by this sync → reopened (only GitHub can have reopened it)
 *   issue open,  task finished in Baton (an agent's done, `baton close`) → kept finished: the
 *                                  issue simply has not closed yet (its PR is not merged), and
 *                                  reopening would hand the finished work out again; unless a
 *                                  reopen NEWER than the finish was observed: a webhook delivery
 *                                  `reopened`, or the issue seen closed since this finish (the
 *                                  `github:issue-closed` ledger row naming the finish), then open
 *                                  again → reopened. The issue's state_reason `reopened` is no such
 *                                  sign: GitHub keeps it while the issue stays open, reopened long ago
 *   issue closed, task not finished → closed (its queued or running job cancelled with the
 *                                  reason), or done when a merged pull request references it
 *   issue closed, task finished in Baton → the `github:issue-closed` row, once per finish
 *   issue closed, no task       → nothing
 *   issue deleted (410 Gone)    → its unfinished task closed, as a closed issue's (applyGone)
 *
 * The gate label is stored among the task's labels only after the gate is set, so a pass killed
 * between the two sets it next time, and a design a human approved is not gated again while the
 * label stays.
 */
import { ConflictError } from '../core/errors.js';
import { validateName } from '../core/validate.js';
import {
  type GithubLabels,
  type RepoName,
  closedVerdict,
  desiredLabels,
  issueKey,
  labelChanges,
  managedLabels,
} from '../core/github.js';
import { BODY_LENGTH_MAX, type Actor, type Task } from '../core/task.js';
import { LABEL_COUNT_MAX, TITLE_LENGTH_MAX } from '../core/validate.js';
import { Lifecycle, triaged } from '../coordinator/lifecycle.js';
import type { AuditEntry } from '../core/audit-event.js';
import type { Store } from '../store/store.js';
import type { GithubApi, GithubIssue } from './api.js';
import { authorTrusted, MEMBERS } from './trust.js';

export interface BacklogDeps {
  readonly store: Store;
  readonly api: GithubApi;
  readonly labels: GithubLabels;
  readonly log: (line: string) => void;
  /**
   * The first delay of the outbox's growing retry delay (the projector's), in ms: 1,000 unless
   * `BATON_GITHUB_RETRY_BASE_MS` says otherwise (the tests shorten it, as they do octokit's).
   */
  readonly retryBaseMs?: number | undefined;
  /** The author associations whose issues are added (trust.ts; OWNER, MEMBER, COLLABORATOR unless said). */
  readonly authors?: ReadonlySet<string> | undefined;
}

export type Applied =
  | 'added'
  | 'updated'
  | 'closed'
  | 'done'
  | 'reopened'
  | 'gated'
  | 'escalated'
  | 'repaired'
  | 'unchanged'
  | 'skipped'
  | 'untrusted';

const ACTOR: Actor = { name: 'github sync' };

export interface ApplyOptions {
  /** The issue passes the sync's label filter (it may be added); true unless said. */
  readonly mayAdd?: boolean | undefined;
  /** A webhook delivery of action `reopened`: GitHub reopened the issue just now. */
  readonly reopened?: boolean | undefined;
}

/** Applies the issue to its task. */
export async function applyIssue(
  deps: BacklogDeps,
  repo: RepoName,
  issue: GithubIssue,
  options: ApplyOptions = {},
): Promise<readonly Applied[]> {
  const key = issueKey(repo, issue.number);
  const { store } = deps;
  const life = new Lifecycle(store);
  const task = await store.tasks.get(key);
  if (issue.state === 'closed') return applyClosed(deps, repo, issue, task);
  const gateWanted = hasLabel(issue.labels, deps.labels.designReview);
  const theirs = ownLabels(issue.labels, deps.labels);
  const theirsUngated = theirs.filter((label) => !hasLabel([deps.labels.designReview], label));
  if (task === null) {
    if (options.mayAdd === false) return ['skipped'];
    if (!authorTrusted(issue.authorAssociation, deps.authors ?? MEMBERS)) {
      deps.log(
        `${key}: not imported: its author is ${issue.authorAssociation ?? 'not said'} ` +
          '(--github-authors imports more than OWNER, MEMBER and COLLABORATOR)',
      );
      return ['untrusted'];
    }
    const out = await addTask(deps, key, issue, theirs);
    // Added meanwhile (a delivery and the sync at once): applied as an update to it.
    return out ?? applyIssue(deps, repo, issue, options);
  }
  const out: Applied[] = [];
  if (task.state === 'done' || task.state === 'closed') {
    // Reopened on GitHub only if it was seen closed since this finish (module doc). Otherwise the
    // issue has simply not closed yet (its PR is not merged).
    if (!(await reopenedSinceFinish(deps, task, issue, options.reopened === true))) return ['unchanged'];
    await life.reopen({ key, by: ACTOR, reason: 'issue reopened on GitHub' });
    out.push('reopened');
  }
  const newGate = gateWanted && !hasLabel(task.labels, deps.labels.designReview);
  if (newGate && task.gate === null && (task.state === 'open' || out.includes('reopened'))) {
    await life.gate({ key, gate: 'design', by: ACTOR });
    out.push('gated');
  }
  // The gate label is stored once the gate is set (module doc): a task not open (escalated) when
  // the label came keeps it out, so the gate is set once the task is open.
  const gateSet = out.includes('gated') || hasLabel(task.labels, deps.labels.designReview);
  const labels = gateSet ? theirs : theirsUngated;
  const hold = await holdEditedText(deps, task, issue, out);
  if (hold === 'gated') out.push('gated');
  // Held back (the task is not open): the stored text stays until the task is open and gated.
  const text = hold === 'held' ? task : { title: issue.title, body: issue.body };
  const title = text.title.slice(0, TITLE_LENGTH_MAX);
  const body = text.body.slice(0, BODY_LENGTH_MAX);
  if (changed(task, { title, body, url: issue.url }, labels)) {
    await store.tasks.update({ key, title, body, url: issue.url, labels, by: ACTOR });
    out.push('updated');
  }
  if (!out.includes('reopened') && (await repairLabels(deps, key, issue))) out.push('repaired');
  return out.length === 0 ? ['unchanged'] : out;
}

/** Why a task waits behind the design gate after its issue's text changed (decision 0013). */
export const EDITED_REASON = "the issue's title or body changed on GitHub, and its author is not a member";

/**
 * An issue whose title or body changed, its author not OWNER, MEMBER or COLLABORATOR: GitHub does
 * not say who edited, and the author may edit after a maintainer queued it, so the new text waits
 * behind the design gate for a human (a queued job waits; a placed one is cancelled by the
 * re-check), each such edit a `github:text-changed` row, even when the task is gated already (the
 * human approves the text they read). A task open, or reopened by this very call (`out`), is
 * gated; one in review or escalated cannot be: its new text is held back ('held', not stored), so
 * once the task is open again the re-check before a run (or the next sync of the issue) sees the
 * difference and gates it. Issues of members are edited only by people with write access: no gate.
 */
async function holdEditedText(
  deps: BacklogDeps,
  task: Task,
  issue: GithubIssue,
  out: readonly Applied[],
): Promise<'gated' | 'noted' | 'held' | null> {
  if (authorTrusted(issue.authorAssociation, MEMBERS) || !textChanged(task, issue)) return null;
  const gated = task.gate !== null || out.includes('gated');
  if (!gated && task.state !== 'open' && !out.includes('reopened')) {
    deps.log(`${task.key}: new title or body held back while the task is ${task.state}: ${EDITED_REASON}`);
    return 'held';
  }
  if (!gated) await new Lifecycle(deps.store).gate({ key: task.key, gate: 'design', by: ACTOR });
  await deps.store.github.note({
    type: 'github:text-changed',
    key: task.key,
    detail: { author: issue.authorAssociation, issueUpdatedAt: issue.updatedAt, reason: EDITED_REASON },
  });
  const approve = `baton approve ${task.key} --gate design`;
  deps.log(
    `${task.key}: ${gated ? 'text changed behind' : 'gated for'} design approval: ${EDITED_REASON} (${approve})`,
  );
  return gated ? 'noted' : 'gated';
}

/** Whether the issue's title or body differ from the task's. */
export function textChanged(task: Task, issue: GithubIssue): boolean {
  return (
    task.title !== issue.title.slice(0, TITLE_LENGTH_MAX) ||
    task.body !== issue.body.slice(0, BODY_LENGTH_MAX)
  );
}

/**
 * The issue's task added (gated when labelled so), or null when a task of its key was added
 * between the caller's read and this add (ConflictError, and the task is there).
 */
async function addTask(
  deps: BacklogDeps,
  key: string,
  issue: GithubIssue,
  theirs: readonly string[],
): Promise<Applied[] | null> {
  const { store } = deps;
  const gateWanted = hasLabel(issue.labels, deps.labels.designReview);
  const theirsUngated = theirs.filter((label) => !hasLabel([deps.labels.designReview], label));
  const fields = await triaged(store, {
    key,
    title: issue.title.slice(0, TITLE_LENGTH_MAX),
    body: issue.body.slice(0, BODY_LENGTH_MAX),
    url: issue.url,
    labels: theirsUngated,
    byName: ACTOR.name,
    actor: ACTOR.name,
  });
  const added = await store.tasks.add(fields).catch(async (error: unknown) => {
    if (error instanceof ConflictError && (await store.tasks.get(key)) !== null) return null;
    throw error;
  });
  if (added === null) return null;
  const out: Applied[] = ['added'];
  if (added.state === 'escalated') out.push('escalated');
  if (gateWanted && added.state === 'open') {
    await new Lifecycle(store).gate({ key, gate: 'design', by: ACTOR });
    out.push('gated');
    await store.tasks.update({ key, labels: theirs, by: ACTOR });
  }
  return out;
}

/** Why a task whose issue was deleted on GitHub (410 Gone) closed. */
export const GONE_REASON = 'issue deleted on GitHub';

/** A closed issue: its unfinished task closed (its job cancelled), or done by a merged PR. */
async function applyClosed(
  deps: BacklogDeps,
  repo: RepoName,
  issue: GithubIssue,
  task: Task | null,
): Promise<readonly Applied[]> {
  if (!unfinished(task)) {
    if (task !== null) await noteClosedSinceFinish(deps, task, issue);
    return ['unchanged'];
  }
  // Closed as not planned or as a duplicate, it is not done, whatever merged PR once mentioned it.
  const completed = issue.stateReason === null || issue.stateReason === 'completed';
  const verdict = closedVerdict(completed ? await deps.api.mergedPullRequest(repo, issue.number) : null);
  return closeTask(deps, task.key, verdict);
}

/**
 * An issue deleted on GitHub (it answers 410 Gone): its unfinished task is closed and its job
 * cancelled, as for an issue closed as not planned. Its outbox rows can never apply; the caller
 * drops them.
 */
export async function applyGone(deps: BacklogDeps, key: string): Promise<readonly Applied[]> {
  const task = await deps.store.tasks.get(key);
  if (!unfinished(task)) return ['unchanged'];
  return closeTask(deps, key, { done: false, reason: GONE_REASON });
}

/** The ledger row saying GitHub's issue was seen closed while its task was finished in Baton. */
const CLOSED_SEEN = 'github:issue-closed';

/**
 * Whether GitHub reopened the issue after the task's finish: the sync closed the task, a webhook
 * delivery said `reopened`, or the issue was seen closed since this finish (its ledger row names
 * the finish's time, so a later finish makes it stale) and this open issue was updated after that
 * closed one. A sync applies a page read seconds before: an open copy read before the close (a
 * merge closed it meanwhile, a delivery recorded the close) is older than the close, not a reopen.
 * Both times are GitHub's `updated_at`, which every change moves on.
 */
async function reopenedSinceFinish(
  deps: BacklogDeps,
  task: Task,
  issue: GithubIssue,
  delivered: boolean,
): Promise<boolean> {
  if (task.stateBy === ACTOR.name || delivered) return true;
  const closedAt = (await closedSeen(deps, task))?.detail['issueUpdatedAt'];
  return typeof closedAt === 'string' && Date.parse(issue.updatedAt) > Date.parse(closedAt);
}

async function closedSeen(deps: BacklogDeps, task: Task): Promise<AuditEntry | null> {
  const rows = await deps.store.audit.list({ key: task.key, type: CLOSED_SEEN, newestFirst: true, limit: 1 });
  const last = rows[0];
  return last !== undefined && last.detail['finishedAt'] === task.stateAt ? last : null;
}

/**
 * A finished task's issue seen closed: recorded once per finish, with the closed issue's update
 * time, so an open issue updated later reopens it.
 */
async function noteClosedSinceFinish(deps: BacklogDeps, task: Task, issue: GithubIssue): Promise<void> {
  if (task.stateBy === ACTOR.name || (await closedSeen(deps, task)) !== null) return;
  await deps.store.github.note({
    type: CLOSED_SEEN,
    key: task.key,
    detail: {
      state: task.state,
      finishedAt: task.stateAt,
      by: task.stateBy,
      issueUpdatedAt: issue.updatedAt,
    },
  });
}

function unfinished(task: Task | null): task is Task {
  return task !== null && !['done', 'closed'].includes(task.state);
}

/** Ends the task, done or closed (a queued or running job of it cancelled), and logs why. */
async function closeTask(
  deps: BacklogDeps,
  key: string,
  verdict: { readonly done: boolean; readonly reason: string },
): Promise<readonly Applied[]> {
  await new Lifecycle(deps.store).close({ key, by: ACTOR, reason: verdict.reason, done: verdict.done });
  deps.log(`${key}: ${verdict.done ? 'done' : 'closed'} (${verdict.reason})`);
  return [verdict.done ? 'done' : 'closed'];
}

/**
 * A label Baton manages that differs from Baton's state, with no outbox row of the issue on its
 * way to GitHub, was edited by hand: queue the projection again and say so in the ledger. (A row
 * applied between the issue's read and this check can make one needless repair: harmless.)
 */
async function repairLabels(deps: BacklogDeps, key: string, issue: GithubIssue): Promise<boolean> {
  const [facts] = await deps.store.github.labelStates([key]);
  if (facts === undefined) return false;
  const expected = desiredLabels(facts, deps.labels);
  const change = labelChanges(issue.labels, expected, deps.labels);
  if (change.add.length === 0 && change.remove.length === 0) return false;
  const waiting = await deps.store.github.pending({ limit: 10_000, key });
  if (waiting.length > 0) return false;
  const found = issue.labels.filter((label) => hasLabel(managedLabels(deps.labels), label));
  await deps.store.github.repair({
    key,
    detail: { expected, found, add: change.add, remove: change.remove },
  });
  deps.log(
    `${key}: labels edited on GitHub (${found.join(', ') || 'none'}); putting back ${expected.join(', ') || 'none'}`,
  );
  return true;
}

function hasLabel(labels: readonly string[], label: string): boolean {
  return labels.some((entry) => entry.toLowerCase() === label.toLowerCase());
}

/**
 * The issue's labels as task labels, in NFC as every name (validateName): Baton's own left out,
 * names Baton cannot keep dropped.
 */
function ownLabels(labels: readonly string[], names: GithubLabels): string[] {
  const kept = labels
    .filter((label) => !hasLabel(managedLabels(names), label))
    .flatMap((label) => {
      try {
        return [validateName('label', label)];
      } catch {
        return [];
      }
    });
  return [...new Set(kept)].sort().slice(0, LABEL_COUNT_MAX);
}

function changed(
  task: Task,
  fields: { readonly title: string; readonly body: string; readonly url: string },
  labels: readonly string[],
): boolean {
  return (
    task.title !== fields.title ||
    task.body !== fields.body ||
    task.url !== fields.url ||
    JSON.stringify([...task.labels].sort()) !== JSON.stringify(labels)
  );
}
