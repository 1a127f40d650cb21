/**
 * `baton github sync`: imports a repository's issues as tasks keyed `github:owner/repo#N`.
 *
 * Resumable by construction: issues are read oldest update first, in pages asked for with
 * `since` = the cursor (the newest `updated_at` fully imported), and the cursor moves only after
 * a page is applied. Every issue is applied by key, so a pass killed halfway and run again
 * re-reads at most one page and adds nothing twice. The first request of a pass is conditional
 * (its ETag kept once its page is applied): a 304 costs no rate limit and changes nothing. A page
 * is asked for by `since` rather than by number, so an issue updated during the pass moves to a
 * later page instead of shifting one out of reach; only when a whole page shares one
 * `updated_at` does the pass turn the page. Each label filter has its own cursor (cursorKey): a
 * pass with `--label` moves past the issues it skips, which a pass without it must still read; so
 * are its pages' ETags (a 304 to one filter says nothing of what another applied). So has each
 * `--github-authors` setting: a pass moves past the issues it passes over, which a wider one reads.
 */
import type { RepoName } from '../core/github.js';
import type { GithubIssue } from './api.js';
import { applyIssue, type Applied, type BacklogDeps } from './apply.js';
import { MEMBERS } from './trust.js';

export interface SyncOptions {
  /** Import only issues carrying one of these labels; empty: every issue. */
  readonly labels: readonly string[];
  /** Stop after this many pages (a test's "killed halfway"); no limit by default. */
  readonly pagesMax?: number | undefined;
  /**
   * A stop: ends the pass at once, in a request or a rate limit's wait, with GithubStoppedError;
   * the cursor stays where the last applied page put it (Backlog.sync).
   */
  readonly signal?: AbortSignal | undefined;
}

export interface SyncReport {
  readonly repo: string;
  readonly notModified: boolean;
  readonly pages: number;
  readonly seen: number;
  readonly added: number;
  readonly updated: number;
  readonly closed: number;
  readonly done: number;
  readonly reopened: number;
  readonly gated: number;
  readonly escalated: number;
  readonly repaired: number;
  /** Issues not imported: their author is not one `--github-authors` trusts (trust.ts), each logged. */
  readonly passedOver: number;
  /** The cursor after the pass. */
  readonly since: string | null;
}

const PAGE = 100;

export async function syncRepo(deps: BacklogDeps, repo: RepoName, options: SyncOptions): Promise<SyncReport> {
  const counts: Record<Applied, number> = {
    added: 0,
    updated: 0,
    closed: 0,
    done: 0,
    reopened: 0,
    gated: 0,
    escalated: 0,
    repaired: 0,
    unchanged: 0,
    skipped: 0,
    untrusted: 0,
  };
  const cursor = cursorKey(repo, options.labels, deps.authors ?? MEMBERS);
  let since = await deps.store.github.cursor(cursor);
  const state = since === null ? 'open' : 'all';
  let pages = 0;
  let seen = 0;
  let page = 1;
  let notModified = false;
  for (;;) {
    if (options.pagesMax !== undefined && pages >= options.pagesMax) break;
    const filter = cursor === repo.full.toLowerCase() ? undefined : cursor;
    const got = await deps.api.listIssues(repo, { since, state, page, filter });
    pages++;
    if (got.notModified) {
      notModified = pages === 1;
      break;
    }
    for (const issue of got.issues) {
      seen++;
      if (issue.isPullRequest) continue;
      for (const outcome of await applyIssue(deps, repo, issue, { mayAdd: wanted(issue, options.labels) })) {
        counts[outcome]++;
      }
    }
    // Only now is the page's ETag kept: had a member failed above, the next pass must not be
    // told 304 for a page it never finished.
    await got.keep();
    const newest = got.issues.at(-1)?.updatedAt ?? null;
    if (newest !== null && newest !== since) {
      since = newest;
      page = 1;
      await deps.store.github.saveCursor({ repo: cursor, since });
    } else {
      page++;
    }
    if (got.issues.length < PAGE) break;
  }
  return {
    repo: repo.full,
    notModified,
    pages,
    seen,
    added: counts.added,
    updated: counts.updated,
    closed: counts.closed,
    done: counts.done,
    reopened: counts.reopened,
    gated: counts.gated,
    escalated: counts.escalated,
    repaired: counts.repaired,
    passedOver: counts.untrusted,
    since,
  };
}

/**
 * Where a pass keeps its cursor: per repository, label filter and trusted authors, since a pass
 * with a filter moves past the issues it skips, and one trusting fewer authors past the issues it
 * passes over (a widened `--github-authors` must read them again). `acme/api` with no filter and
 * the default authors (as before filters had cursors of their own), `acme/api labels:ai,bug` with
 * a filter (lower case, sorted: the filter's own matching), ` authors:contributor,member,...` added
 * for any other authors; the repository in lower case, as in its task keys.
 */
function cursorKey(repo: RepoName, labels: readonly string[], authors: ReadonlySet<string>): string {
  const full = repo.full.toLowerCase(); // one cursor whatever the repository's spelling (issueKey)
  const names = [...new Set(labels.map((label) => label.normalize('NFC').toLowerCase()))].sort();
  const filter = labels.length === 0 ? full : `${full} labels:${names.join(',')}`;
  const members = authors.size === MEMBERS.size && [...MEMBERS].every((entry) => authors.has(entry));
  if (members) return filter;
  return `${filter} authors:${[...authors]
    .map((entry) => entry.toLowerCase())
    .sort()
    .join(',')}`;
}

/** Whether the issue passes the label filter (`--github-label`: any of them; none given, all). */
export function wanted(issue: GithubIssue, labels: readonly string[]): boolean {
  if (labels.length === 0) return true;
  const have = issue.labels.map((label) => label.toLowerCase());
  return labels.some((label) => have.includes(label.toLowerCase()));
}
