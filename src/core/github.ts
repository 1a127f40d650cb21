/**
 * The GitHub backlog's domain rules, pure: repository names and task keys
 * (`github:owner/repo#N`), the labels that project a task's state onto its issue, and what an
 * issue seen on GitHub means for its task. The adapter (src/github/) does the talking.
 *
 *   label          while
 *   ai-dev-queued  the task has a queued or placed job (and no live claim or running job)
 *   WIP            a live claim or a running job exists
 *   human-action   the task is escalated
 */
import { InvalidInputError } from './errors.js';
import type { ActiveJobState } from './job.js';
import type { TaskState } from './task.js';
import type { Instant } from './time.js';

export interface GithubLabels {
  readonly wip: string;
  readonly queued: string;
  readonly human: string;
  /** Read, never written: an imported issue carrying it gets the design gate. */
  readonly designReview: string;
}

export const DEFAULT_GITHUB_LABELS: GithubLabels = {
  wip: 'WIP',
  queued: 'ai-dev-queued',
  human: 'human-action',
  designReview: 'needs-design-review',
};

/** GitHub's own limits: owner up to 39 characters, repository up to 100, of [A-Za-z0-9._-]. */
const REPO = /^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))\/([A-Za-z0-9._-]{1,100})$/;

export interface RepoName {
  readonly owner: string;
  readonly repo: string;
  /** `owner/repo` */
  readonly full: string;
}

export function parseRepo(value: unknown): RepoName {
  const text = typeof value === 'string' ? value.trim() : '';
  const match = REPO.exec(text);
  if (
    match === null ||
    match[1] === undefined ||
    match[2] === undefined ||
    match[2] === '.' ||
    match[2] === '..'
  ) {
    throw new InvalidInputError(
      `repository ${JSON.stringify(value)} is not of the form owner/repo`,
      'give it as on GitHub, such as acme/api',
    );
  }
  return { owner: match[1], repo: match[2], full: `${match[1]}/${match[2]}` };
}

/** The key prefix of a task that mirrors a GitHub issue (the outbox's triggers test it too). */
export const GITHUB_KEY_PREFIX = 'github:';

/**
 * The issue's task key: `github:owner/repo#N` with the owner/repo in lower case. GitHub's owner and
 * repository names are case-insensitive (`Acme/API` and `acme/api` are one repository), so one
 * issue is one key whatever the spelling it came by: a command line, a webhook's `full_name`, a
 * hand-typed key (validateKey). Decision 0013, amendment "one issue, one key".
 */
export function issueKey(repo: RepoName, issue: number): string {
  return `${GITHUB_KEY_PREFIX}${repo.full.toLowerCase()}#${issue}`;
}

/** A `github:owner/repo#N` key as issueKey spells it; any other key as given. */
export function canonicalIssueKey(key: string): string {
  const parsed = parseIssueKey(key);
  return parsed === null ? key : issueKey(parsed.repo, parsed.issue);
}

/** The repository and issue number of a `github:owner/repo#N` key, or null for any other key. */
export function parseIssueKey(key: string): { readonly repo: RepoName; readonly issue: number } | null {
  const match = /^github:([^#]+)#([1-9][0-9]{0,9})$/.exec(key);
  if (match === null || match[1] === undefined || match[2] === undefined) return null;
  try {
    return { repo: parseRepo(match[1]), issue: Number(match[2]) };
  } catch {
    return null;
  }
}

export function sameRepo(repo: string, other: string): boolean {
  return repo.toLowerCase() === other.toLowerCase();
}

/** What a task's issue labels are projected from. */
export interface LabelFacts {
  readonly state: TaskState;
  /** A live claim is held on the task. */
  readonly held: boolean;
  /** The status of its active job, if it has one. */
  readonly jobStatus: ActiveJobState | null;
}

/** The labels Baton manages that the issue should carry now, in a stable order. */
export function desiredLabels(facts: LabelFacts, names: GithubLabels): readonly string[] {
  const wip = facts.held || facts.jobStatus === 'running';
  const queued = !wip && (facts.jobStatus === 'queued' || facts.jobStatus === 'claimed');
  return [
    ...(wip ? [names.wip] : []),
    ...(queued ? [names.queued] : []),
    ...(facts.state === 'escalated' ? [names.human] : []),
  ];
}

/** The labels Baton writes (the design-review label is the humans' own). */
export function managedLabels(names: GithubLabels): readonly string[] {
  return [names.wip, names.queued, names.human];
}

/** What to add and remove so that `current` carries exactly `desired` of the managed labels. */
export function labelChanges(
  current: readonly string[],
  desired: readonly string[],
  names: GithubLabels,
): { readonly add: readonly string[]; readonly remove: readonly string[] } {
  const has = (list: readonly string[], label: string): boolean =>
    list.some((entry) => entry.toLowerCase() === label.toLowerCase());
  return {
    add: desired.filter((wanted) => !has(current, wanted)),
    remove: managedLabels(names).filter((managed) => has(current, managed) && !has(desired, managed)),
  };
}

/** What a closed issue does to its task: done when a merged pull request closed it. */
export type ClosedVerdict = { readonly done: boolean; readonly reason: string };

export function closedVerdict(mergedPr: number | null): ClosedVerdict {
  return mergedPr === null
    ? { done: false, reason: 'issue closed on GitHub' }
    : { done: true, reason: `issue closed on GitHub by merged pull request #${mergedPr}` };
}

/** Label names: GitHub allows up to 50 characters; Baton's own must be distinct. */
export function validateLabelNames(names: GithubLabels): GithubLabels {
  const all = [names.wip, names.queued, names.human, names.designReview];
  for (const name of all) {
    if (name.trim().length === 0 || name.length > 50 || name !== name.trim()) {
      throw new InvalidInputError(
        `label name ${JSON.stringify(name)} is not usable on GitHub`,
        'give 1 to 50 characters without surrounding spaces',
      );
    }
  }
  if (new Set(all.map((name) => name.toLowerCase())).size !== all.length) {
    throw new InvalidInputError(
      `label names ${all.join(', ')} are not distinct`,
      'give four different names',
    );
  }
  return names;
}

/** The token's variable (`--token-env`, GITHUB_TOKEN by default), refused unless a variable name. */
export function tokenVariable(name: string | undefined): string {
  const tokenEnv = name ?? 'GITHUB_TOKEN';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(tokenEnv)) {
    throw new InvalidInputError(
      `--token-env ${JSON.stringify(tokenEnv)} is not a variable name`,
      'give a name such as GITHUB_TOKEN (letters, digits and _, not starting with a digit)',
    );
  }
  return tokenEnv;
}

/** The outbox rows not yet applied of one repository no sync has run for (`baton doctor`). */
export interface UnsyncedOutbox {
  /**
   * `owner/repo` as the keys spell it: in lower case (issueKey), but for a pair migration 0050 left
   * (the projector reads lower-case keys only).
   */
  readonly repo: string;
  readonly rows: number;
  readonly oldestAt: Instant;
}
