/**
 * What Baton reads of what GitHub sends: an issue as the REST API answers it (a sync page, a
 * single read), and the fields of a webhook delivery it acts on. Each is checked against a schema
 * of only the fields Baton reads (the rest is GitHub's, passed over unread), so a field of the
 * wrong shape is one line naming it (`issue.number: must be a positive integer, got "5/comments"`),
 * not a TypeError deep inside and a 500, nor an unchecked value in the path of an API request. A
 * delivery's problem is its sender's (400, webhook.ts); an API answer's is GitHub's or a proxy's
 * (GithubUnavailableError, tried again on the next pass: api.ts).
 */
import { z } from 'zod';
import type { RepoName } from '../core/github.js';
import type { GithubIssue } from './api.js';

/** What was read, or what was wrong with it in one line. */
export type Read<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

/** An issue's number, as it goes into a key and into an API path. */
const issueNumber = z.custom<number>(
  (value) => typeof value === 'number' && Number.isSafeInteger(value) && value > 0,
  { error: 'must be a positive integer' },
);

const label = z.union([z.string(), z.object({ name: z.string().nullish() })], {
  error: 'expected a label (a name, or an object with a name)',
});

/** GitHub's issue (REST, and a pull request as the issues list gives it): the fields Baton reads. */
const rawIssue = z.object({
  number: issueNumber,
  title: z.string(),
  body: z.string().nullish(),
  state: z.string(),
  labels: z.array(label),
  html_url: z.string(),
  updated_at: z.string(),
  pull_request: z.unknown().optional(),
  state_reason: z.string().nullish(),
  author_association: z.string().nullish(),
});

const toIssue = (issue: z.infer<typeof rawIssue>): GithubIssue => ({
  stateReason: issue.state_reason ?? null,
  authorAssociation: issue.author_association ?? null,
  number: issue.number,
  title: issue.title,
  body: issue.body ?? '',
  state: issue.state === 'closed' ? 'closed' : 'open',
  labels: issue.labels
    .map((entry) => (typeof entry === 'string' ? entry : (entry.name ?? '')))
    .filter((entry) => entry !== ''),
  url: issue.html_url,
  updatedAt: issue.updated_at,
  isPullRequest: issue.pull_request !== undefined && issue.pull_request !== null,
});

/** One issue, as `GET /repos/{owner}/{repo}/issues/{number}` answers it. */
export function readIssue(value: unknown): Read<GithubIssue> {
  return read(rawIssue, value, toIssue);
}

/** A page of `GET /repos/{owner}/{repo}/issues`: every member read, or the first one wrong named. */
export function readIssues(value: unknown): Read<readonly GithubIssue[]> {
  const list = readList(value, 'issues');
  return list.ok ? read(z.array(rawIssue), list.value, (issues) => issues.map(toIssue)) : list;
}

/** A list GitHub answered (a timeline page), its members not looked at. */
export function readList(value: unknown, of: string): Read<readonly unknown[]> {
  return Array.isArray(value)
    ? { ok: true, value: value as unknown[] }
    : { ok: false, problem: `expected a list of ${of}, got ${shown(value)}` };
}

/**
 * A delivery, as far as Baton acts on it: an `issues` event names an issue (read again from
 * GitHub, so only its number is taken); a `pull_request` event closed by a merge, the text that
 * may say which issues it closes; anything else is only looked at for its repository.
 */
export type Delivery = { readonly repository: string | null } & (
  | {
      readonly kind: 'issue';
      readonly number: number;
      readonly isPullRequest: boolean;
      /** The action was `reopened`: GitHub reopened the issue just now. */
      readonly reopened: boolean;
      /** The action was `deleted`: the issue is gone from GitHub (and from every sync's pages). */
      readonly deleted: boolean;
    }
  | { readonly kind: 'merged'; readonly text: string }
  | { readonly kind: 'other' }
);

const common = {
  action: z.string().optional(),
  repository: z.object({ full_name: z.string() }).optional(),
};
const issuesEvent = z.object({
  ...common,
  issue: z.object({ number: issueNumber, pull_request: z.unknown().optional() }),
});
const pullRequestEvent = z.object({
  ...common,
  pull_request: z.object({
    merged: z.boolean().nullish(),
    title: z.string().nullish(),
    body: z.string().nullish(),
  }),
});
const otherEvent = z.object(common);

export function readDelivery(event: string, value: unknown): Read<Delivery> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, problem: `the payload is not a JSON object, got ${shown(value)}` };
  if (event === 'issues') {
    return read(issuesEvent, value, ({ repository, action, issue }) => ({
      repository: repository?.full_name ?? null,
      kind: 'issue',
      number: issue.number,
      isPullRequest: issue.pull_request !== undefined && issue.pull_request !== null,
      reopened: action === 'reopened',
      deleted: action === 'deleted',
    }));
  }
  if (event === 'pull_request') {
    return read(pullRequestEvent, value, ({ repository, action, pull_request: pr }) =>
      action === 'closed' && pr.merged === true
        ? {
            repository: repository?.full_name ?? null,
            kind: 'merged',
            text: `${pr.title ?? ''}\n${pr.body ?? ''}`,
          }
        : { repository: repository?.full_name ?? null, kind: 'other' },
    );
  }
  return read(otherEvent, value, ({ repository }) => ({
    repository: repository?.full_name ?? null,
    kind: 'other',
  }));
}

function read<S extends z.ZodType, T>(schema: S, value: unknown, then: (parsed: z.infer<S>) => T): Read<T> {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return { ok: true, value: then(parsed.data) };
  const [first] = parsed.error.issues;
  if (first === undefined) return { ok: false, problem: 'not what GitHub sends' };
  const where = first.path.map(String).join('.');
  const what = first.code === 'invalid_type' ? `expected ${first.expected}` : first.message;
  return { ok: false, problem: `${where === '' ? 'the value' : where}: ${what}, got ${shown(first.input)}` };
}

/** A value named in a problem: short, and never a whole object. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

interface TimelineEvent {
  event?: string;
  source?: {
    issue?: {
      number?: number;
      repository_url?: string;
      repository?: { full_name?: string };
      pull_request?: { merged_at?: string | null };
    };
  };
}

/**
 * The first merged pull request of `repo` cross-referenced in these events, or null. The PR's
 * repository is `source.issue.repository.full_name` (GitHub sends it on cross-referenced events),
 * else the end of its `repository_url`, which the issue schema requires; both case-insensitive,
 * as GitHub's names are.
 */
export function mergedHere(events: readonly unknown[], repo: RepoName): number | null {
  const want = repo.full.toLowerCase();
  // Members are GitHub's (checked as a list only): one of another shape is passed over.
  for (const event of events as readonly (TimelineEvent | null)[]) {
    const pr = event?.source?.issue;
    if (event?.event !== 'cross-referenced' || pr?.pull_request?.merged_at == null) continue;
    const from = pr.repository?.full_name ?? /\/repos\/([^/]+\/[^/]+)$/.exec(String(pr.repository_url))?.[1];
    if (typeof from === 'string' && from.toLowerCase() === want && typeof pr.number === 'number')
      return pr.number;
  }
  return null;
}
