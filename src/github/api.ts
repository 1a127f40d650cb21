/**
 * The GitHub REST calls Baton makes, over octokit with its throttling plugin (primary and
 * secondary rate limits: wait as GitHub says, then retry) and its retry plugin (5xx and network
 * failures, a timeout among them). Reads are conditional: the ETag and body of each GET are kept
 * in the store (`github_cache`), and a 304 answers from there without spending rate limit.
 *
 * The token is given to octokit and to nothing else: every error leaving this module is a
 * GithubUnavailableError whose message is built here from the method, path and status, with the
 * token scrubbed from anything GitHub sent back.
 */
import { Octokit } from '@octokit/rest';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { GithubUnavailableError } from '../core/errors.js';
import type { RepoName } from '../core/github.js';
import {
  GithubRateLimitedError,
  rateLimitPolicy,
  rateLimited,
  waitingOut,
  type RateLimits,
} from './rate-limit.js';
import { mergedHere, readIssue, readIssues, readList, type Read } from './payload.js';
import { GithubStoppedError, stoppableFetch } from './stop.js';
import { GithubNotFoundError, IssueGoneError } from './errors.js';

export interface GithubIssue {
  readonly number: number;
  readonly title: string;
  readonly body: string;
  readonly state: 'open' | 'closed';
  readonly labels: readonly string[];
  readonly url: string;
  readonly updatedAt: string;
  readonly isPullRequest: boolean;
  /** Why a closed issue closed (`completed`, `not_planned`, `duplicate`); null when GitHub says none. */
  readonly stateReason: string | null;
  /** GitHub's `author_association` (OWNER, MEMBER, NONE, ...); null when not sent (trust.ts). */
  readonly authorAssociation: string | null;
}

/** Where conditional requests keep what they saw (the store's github_cache). */
export interface ResponseCache {
  cached(url: string): Promise<{ readonly etag: string; readonly body: string } | null>;
  cache(params: { readonly url: string; readonly etag: string; readonly body: string }): Promise<void>;
}

export interface GithubApiOptions {
  readonly token: string;
  /** GITHUB_API_URL; https://api.github.com by default. */
  readonly baseUrl: string;
  readonly cache: ResponseCache;
  /** One request's limit before it is abandoned (and retried). */
  readonly timeoutMs?: number | undefined;
  /**
   * The retry plugin waits n² times this after the n-th failure (1 s by default); a rate limit
   * waits its retry-after or reset seconds times this over 1,000 (so 1,000 waits them as given).
   */
  readonly retryBaseMs?: number | undefined;
  /** What a second of octokit's pacing of writes waits (pace.ts); the plugin's own second by default. */
  readonly writePaceMs?: number | undefined;
  /** How many times a failed request (5xx, network, timeout) or a rate-limited one is retried. */
  readonly retries?: number | undefined;
  /**
   * `wait` (the sync, the projector; the default): a rate limit is waited out as GitHub says, up to
   * `retries` times. `brief` (the re-check before a run, which a placed job waits on): a primary
   * limit is never waited (its reset is up to an hour away), a secondary one only when GitHub asks
   * for at most 10 s, once. `never` (a webhook delivery, which GitHub gives 10 s): not at all.
   * A limit not waited fails the request at once with a GithubRateLimitedError naming the reset
   * (rate-limit.ts).
   */
  readonly rateLimits?: RateLimits | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

const RestWithPlugins = Octokit.plugin(throttling, retry);
type Client = InstanceType<typeof RestWithPlugins>;

export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';

/** Each client's token's login (GithubApi.login): views of one client share it. */
const LOGINS = new WeakMap<object, Promise<string | null>>();

export class GithubApi {
  private readonly client: Client;
  private readonly token: string;
  /** Ends this view's requests and rate-limit waits (stoppedBy): a stop of the pass. */
  private readonly signal: AbortSignal | undefined;

  constructor(
    private readonly options: GithubApiOptions,
    view?: { readonly client: Client; readonly signal: AbortSignal },
  ) {
    this.token = options.token;
    this.signal = view?.signal;
    const timeoutMs = options.timeoutMs ?? 15_000;
    this.client =
      view?.client ??
      new RestWithPlugins({
        auth: options.token,
        baseUrl: options.baseUrl.replace(/\/+$/, ''),
        userAgent: 'baton',
        log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
        request: { fetch: (url: string, init: RequestInit) => stoppableFetch(url, init, timeoutMs) },
        ...rateLimitPolicy({ ...options, retries: options.retries ?? 3 }),
      });
  }

  /**
   * This client (its octokit, its pacing of writes) for one pass that `signal` may stop: a request
   * under way is abandoned and a rate limit's wait ends at once, both with GithubStoppedError.
   */
  stoppedBy(signal: AbortSignal | undefined): GithubApi {
    return signal === undefined ? this : new GithubApi(this.options, { client: this.client, signal });
  }

  /**
   * One page of the repository's issues (and pull requests, which GitHub lists with them),
   * oldest update first. The first page of a query is conditional: `notModified` when GitHub
   * says nothing changed since the cached answer.
   */
  async listIssues(
    repo: RepoName,
    params: {
      readonly since: string | null;
      readonly state: 'open' | 'all';
      readonly page: number;
      /**
       * The pass's label filter, as its cursor names it: its ETags are its own (a pass with
       * another filter applied the page otherwise).
       */
      readonly filter?: string | undefined;
    },
  ): Promise<IssuePage> {
    const query = new URLSearchParams({
      state: params.state,
      sort: 'updated',
      direction: 'asc',
      per_page: '100',
      page: String(params.page),
      ...(params.since === null ? {} : { since: params.since }),
    });
    const path = `/repos/${repo.full}/issues?${query.toString()}`;
    const got = await this.conditional(path, params.page === 1, false, params.filter);
    if (got.body === null) return { notModified: true, issues: [], keep: got.keep };
    const issues = this.readable('GET', path, readIssues(JSON.parse(got.body)));
    return { notModified: false, issues, keep: got.keep };
  }

  /** The issue, by one conditional request. */
  async issue(repo: RepoName, number: number): Promise<GithubIssue> {
    const path = `/repos/${repo.full}/issues/${number}`;
    const got = await this.conditional(path, true, true);
    await got.keep();
    return this.readable('GET', path, readIssue(JSON.parse(got.body ?? 'null')));
  }

  /**
   * What was read of GitHub's answer; an answer of the wrong shape (payload.ts) is GitHub
   * unavailable, as a 5xx is: the sync's page is not applied, and its next pass asks again.
   */
  private readable<T>(method: string, path: string, read: Read<T>): T {
    if (read.ok) return read.value;
    throw new GithubUnavailableError(
      this.scrub(
        `GitHub ${method} ${path.split('?')[0] ?? path}: an answer Baton cannot read (${read.problem})`,
      ),
      "check that GITHUB_API_URL is GitHub's REST API (or your GitHub Enterprise's /api/v3); " +
        'Baton retries on its next pass',
    );
  }

  /**
   * The number of the first merged pull request of THIS repository that references the issue, in
   * its timeline (oldest event first), or null. A PR opened from a fork into this repository is
   * this repository's PR (its `source.issue.repository` is this one). A PR merged in another
   * repository (a fork's own PR that says "fixes acme/api#7") merged nothing here, so it does
   * not make the task done: the issue closed as completed for some other reason. GitHub itself
   * closes an issue from another repository's PR only through a closing keyword by someone who
   * can push to the issue's repository; Baton's agents open their PRs in the issue's repository,
   * so such a close is a human's call, and the task is `closed` (see decision 0013).
   *
   * The timeline is read 100 events a page, following GitHub's `Link: <…>; rel="next"`. The
   * first page is conditional, as every read here (a 304 answers from the cache, without rate
   * limit); on a 304 GitHub need not repeat the Link header, so a full cached first page is
   * followed by asking for page 2. Later pages are asked unconditionally: they are read only for
   * an issue with more than 100 events, rarely and once per close, and new events land on the
   * last page, so their ETags would seldom answer 304 while each would take a cache row. At most
   * TIMELINE_PAGES_MAX pages (1,000 events) are read: past them the look-up gives up, logs it,
   * and the issue counts as closed without a merged PR (its task `closed`, not `done`).
   */
  async mergedPullRequest(repo: RepoName, number: number): Promise<number | null> {
    const first = `/repos/${repo.full}/issues/${number}/timeline?per_page=100`;
    const got = await this.conditional(first, true, true);
    await got.keep();
    const events = this.readable('GET', first, readList(JSON.parse(got.body ?? '[]'), 'timeline events'));
    let found = mergedHere(events, repo);
    let next = got.link === null ? (events.length >= 100 ? `${first}&page=2` : null) : this.next(got.link);
    for (let page = 2; found === null && next !== null; page++) {
      if (page > TIMELINE_PAGES_MAX) {
        this.options.log?.(
          `GitHub: ${repo.full}#${number} has more than ${TIMELINE_PAGES_MAX * 100} timeline events; ` +
            'no merged pull request among the first ones, so it counts as closed, not done',
        );
        return null;
      }
      const more = await this.call('GET', next);
      found = mergedHere(this.readable('GET', next, readList(more.data, 'timeline events')), repo);
      const link = more.headers['link'];
      next = typeof link === 'string' ? this.next(link) : null;
    }
    return found;
  }

  /**
   * The path of a Link header's rel="next" page, or null. A URL outside GITHUB_API_URL is not
   * followed: the token goes to GitHub's API and nowhere else.
   */
  private next(link: string): string | null {
    const url = /<([^>]+)>\s*;\s*rel="next"/.exec(link)?.[1];
    const base = this.options.baseUrl.replace(/\/+$/, '');
    return url?.startsWith(`${base}/`) === true ? url.slice(base.length) : null;
  }

  async addLabels(repo: RepoName, number: number, labels: readonly string[]): Promise<void> {
    await this.call('POST', `/repos/${repo.full}/issues/${number}/labels`, { labels: [...labels] });
  }

  /** Removes the label; one the issue no longer carries is no error. */
  async removeLabel(repo: RepoName, number: number, label: string): Promise<void> {
    const path = `/repos/${repo.full}/issues/${number}/labels/${encodeURIComponent(label)}`;
    await this.call('DELETE', path, undefined, [404]);
  }

  /**
   * Posts a comment, once: octokit's retry would send the POST again after a timeout or a 5xx,
   * when GitHub may have made the comment already; the projector's next pass looks for it first.
   */
  async comment(repo: RepoName, number: number, body: string): Promise<void> {
    await this.call('POST', `/repos/${repo.full}/issues/${number}/comments`, {
      body,
      request: { retries: 0 },
    });
  }

  /**
   * Whether a comment made since `since` (an hour's slack for the clocks) by the token's own user
   * ends with `marker`, as the projector's posts do. Ends, not contains: a marker quoted inside a
   * comment's text (a note or a reason that holds one, a person's comment) is not that post. By the
   * token's user: the markers are sequential and invisible when rendered, so anyone who may comment
   * could otherwise post one ahead and stop Baton's post. GitHub lists an issue's comments oldest
   * first, so the window, not the page, bounds the read.
   */
  async hasComment(repo: RepoName, number: number, marker: string, since: number): Promise<boolean> {
    const self = await this.login();
    const after = new Date(since - 3_600_000).toISOString();
    const path = `/repos/${repo.full}/issues/${number}/comments?per_page=100&since=${after}`;
    const got = await this.call('GET', path);
    const mine = (user: { login?: string; type?: string } | null | undefined): boolean =>
      self === null
        ? user?.type === 'Bot'
        : self !== '' && (user?.login ?? '').toLowerCase() === self.toLowerCase();
    return (got.data as { body?: string; user?: { login?: string; type?: string } | null }[]).some(
      (comment) => mine(comment.user) && (comment.body ?? '').trimEnd().endsWith(marker),
    );
  }

  /**
   * The token's own user (`GET /user`, its `login`), asked once per client; a failure is not kept.
   * Null for a GitHub App's installation token (an Actions GITHUB_TOKEN too), which GitHub refuses
   * `GET /user` (403 "Resource not accessible by integration"): its comments are its bot user's,
   * `type: Bot`, which no person commenting can be.
   */
  private login(): Promise<string | null> {
    const known = LOGINS.get(this.client);
    if (known !== undefined) return known;
    const asked = this.call('GET', '/user', undefined, [403, 404]).then((got) => {
      if (got.status === 403 || got.status === 404) return null;
      const login = (got.data as { login?: unknown }).login;
      return typeof login === 'string' ? login : '';
    });
    LOGINS.set(this.client, asked);
    asked.catch(() => LOGINS.delete(this.client));
    return asked;
  }

  /**
   * A GET that presents the cached ETag. Returns GitHub's body; on a 304, the cached body when
   * `always`, else null (nothing changed). The answer's ETag is cached only by `keep`, once the
   * caller has used the body: a page whose application failed halfway is asked for again
   * unconditionally, not answered 304 until the repository changes.
   */
  private async conditional(
    path: string,
    useCache: boolean,
    always = false,
    filter?: string,
  ): Promise<Conditional> {
    const url = filter === undefined ? path : `${path} ${filter}`;
    const cached = useCache ? await this.options.cache.cached(url) : null;
    const headers = cached === null ? {} : { 'if-none-match': cached.etag };
    const got = await this.call('GET', path, undefined, [304], headers);
    if (got.status === 304 && cached !== null)
      return { body: always ? cached.body : null, keep: nothing, link: null };
    const body = JSON.stringify(got.data);
    const etag = got.headers['etag'];
    const link = got.headers['link'];
    const keep =
      useCache && typeof etag === 'string' ? () => this.options.cache.cache({ url, etag, body }) : nothing;
    return { body, keep, link: typeof link === 'string' ? link : '' };
  }

  private async call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    data: Record<string, unknown> = {},
    accepted: readonly number[] = [],
    headers: Record<string, string> = {},
  ): Promise<{ status: number; data: unknown; headers: Record<string, unknown> }> {
    const route = `${method} ${path}`;
    const request = {
      ...(data['request'] as object | undefined),
      ...(this.signal && { signal: this.signal }),
    };
    try {
      const response = await waitingOut(() => this.client.request(route, { ...data, headers, request }), {
        request: route,
        rateLimits: this.options.rateLimits ?? 'wait',
        retries: this.options.retries ?? 3,
        baseMs: this.options.retryBaseMs ?? 1000,
        log: this.options.log ?? (() => undefined),
        signal: this.signal,
      });
      return { status: response.status, data: response.data, headers: response.headers };
    } catch (error) {
      const where = `GitHub ${method} ${path.split('?')[0] ?? path}`;
      if (error instanceof GithubStoppedError) throw error;
      if (this.signal?.aborted === true)
        throw new GithubStoppedError(`${where}: stopped before GitHub answered`);
      const status = (error as { status?: unknown }).status;
      // Accepted, but never a spent rate limit (a 403 or 429 that is one ends as GithubRateLimitedError).
      if (
        typeof status === 'number' &&
        accepted.includes(status) &&
        rateLimited(error, describe(error)) === null
      ) {
        return { status, data: null, headers: {} };
      }
      // 410 is also GitHub's answer when a repository's issues are turned off: that is not the
      // issue's end (turned on again, they are all back), so only "deleted" is taken as gone.
      if (status === 410 && !/disabled/i.test(describe(error)))
        throw new IssueGoneError(this.scrub(`${where}: 410 Gone`));
      const limited = rateLimited(error, describe(error));
      if (limited !== null)
        throw new GithubRateLimitedError(this.scrub(`${where}: ${describe(error)}`), limited);
      const Unavailable = status === 404 ? GithubNotFoundError : GithubUnavailableError;
      throw new Unavailable(
        this.scrub(`${where}: ${describe(error)}`),
        'check GITHUB_API_URL, the token and its scopes (issues: read and write); Baton retries on its next pass',
      );
    }
  }

  private scrub(text: string): string {
    return this.token.length === 0 ? text : text.split(this.token).join('[token]');
  }
}

/** A conditional GET's answer, and how to remember its ETag once the body has been used. */
interface Conditional {
  readonly body: string | null;
  readonly keep: () => Promise<void>;
  /** The answer's Link header ('' when it had none); null on a 304, which need not carry it. */
  readonly link: string | null;
}

/** Timeline pages mergedPullRequest reads, 100 events each, before it gives up. */
const TIMELINE_PAGES_MAX = 10;

/** One page of a repository's issues; `keep` caches its ETag, to call once the page is applied. */
export interface IssuePage {
  readonly notModified: boolean;
  readonly issues: readonly GithubIssue[];
  readonly keep: () => Promise<void>;
}

const nothing = (): Promise<void> => Promise.resolve();

function describe(error: unknown): string {
  const status = (error as { status?: unknown }).status;
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split('\n')[0] ?? message;
  return typeof status === 'number' && status !== 500 ? `${status} ${first}` : first;
}
