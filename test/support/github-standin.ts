/**
 * A GitHub stand-in: a local HTTP server speaking the REST endpoints Baton uses (issues list and
 * get, timeline paged with a Link header as GitHub pages it, labels add and remove, comments list
 * and post), with ETags and 304s, and faults to inject: 500s, primary rate limits (403 with
 * x-ratelimit-remaining: 0), secondary ones (403 with retry-after), and timeouts (a request left
 * unanswered). Every response it sends is
 * handed to `onResponse`, which the tests point at the OpenAPI validator (github-openapi.ts).
 * Octokit reaches it through GITHUB_API_URL.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { repositoryJson } from './github-repository.js';

export type Fault = '500' | 'primary' | 'secondary' | 'timeout';

export interface SentResponse {
  readonly method: string;
  /** The OpenAPI path template the request matched, e.g. /repos/{owner}/{repo}/issues. */
  readonly route: string;
  readonly status: number;
  readonly body: unknown;
}

export interface StoredIssue {
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  stateReason: 'completed' | 'not_planned' | 'reopened' | null;
  labels: string[];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  comments: { id: number; body: string; at: string; by: string }[];
  mergedPr: number | null;
  /** The merged PR's repository (owner/name): this one unless a fork's PR mentioned the issue. */
  mergedPrRepo: string | null;
  /** Labeled events in the timeline before the cross-reference (the timeline pages by 100). */
  eventsBefore: number;
  isPr: boolean;
  /** GitHub's author_association of its author: OWNER unless a test says. */
  author: string;
}

const USER = (base: string) => ({
  login: 'octo',
  id: 1,
  node_id: 'MDQ6VXNlcjE=',
  avatar_url: 'https://avatars.example/u/1',
  gravatar_id: '',
  url: `${base}/users/octo`,
  html_url: 'https://github.example/octo',
  followers_url: `${base}/users/octo/followers`,
  following_url: `${base}/users/octo/following{/other_user}`,
  gists_url: `${base}/users/octo/gists{/gist_id}`,
  starred_url: `${base}/users/octo/starred{/owner}{/repo}`,
  subscriptions_url: `${base}/users/octo/subscriptions`,
  organizations_url: `${base}/users/octo/orgs`,
  repos_url: `${base}/users/octo/repos`,
  events_url: `${base}/users/octo/events{/privacy}`,
  received_events_url: `${base}/users/octo/received_events`,
  type: 'User',
  site_admin: false,
});

export class GithubStandIn {
  readonly issues = new Map<number, StoredIssue>();
  readonly faults: Fault[] = [];
  readonly deleted = new Set<number>();
  /** Who the token is (`GET /user`) is `octo`; a comment is posted as this user (a test's other person). */
  commenter = 'octo';
  /**
   * The token is a GitHub App's installation token: `GET /user` answers 403, and its comments are
   * its bot user's (`baton-app[bot]`, type Bot), as GitHub answers an integration.
   */
  appToken = false;
  /** The repository's issues turned off: every issue request answers 410, as GitHub does. */
  issuesDisabled = false;
  /** Faults applied to every request whose path matches, until cleared (GitHub "down"). */
  down: Fault | null = null;
  /**
   * Requests (`METHOD /path?query`) matching this are applied, then never answered: GitHub did
   * the work and the answer was lost (the client's timeout fires).
   */
  late: RegExp | null = null;
  /** A rate limit fault's status (GitHub sends 403 or 429) and when it lifts, in seconds from now. */
  rateLimit: { status: 403 | 429; liftsInS: number } = { status: 403, liftsInS: 1 };
  /** A fault for the issues list only (the sync cannot see GitHub; single reads still work). */
  listDown: Fault | null = null;
  /** A fault for issues' timelines only (an issue read works, the merged-PR look-up does not). */
  timelineDown: Fault | null = null;
  /** Each issue's labels after every change, oldest first. */
  readonly history = new Map<number, string[][]>();
  readonly sent: SentResponse[] = [];
  /** Every Authorization header seen (the tests check the token was sent, and nowhere else). */
  readonly authorizations: string[] = [];
  requests = 0;
  private server: Server | null = null;
  private clock = Date.parse('2026-01-01T00:00:00Z');
  private nextComment = 1;
  url = '';

  constructor(
    readonly repo: string,
    private readonly onResponse: (r: SentResponse) => void = () => undefined,
  ) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** A strictly later update time for each change, like GitHub's `updated_at` (seconds). */
  private tick(): string {
    this.clock += 1000;
    return new Date(this.clock).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  add(
    number: number,
    o: { title?: string; body?: string; labels?: string[]; isPr?: boolean; author?: string } = {},
  ): void {
    const at = this.tick();
    this.issues.set(number, {
      number,
      title: o.title ?? `Issue ${number}: make the widget faster for everyone`,
      body: o.body ?? 'The widget takes three seconds to load; it should take less than one.',
      state: 'open',
      stateReason: null,
      labels: [...(o.labels ?? [])],
      createdAt: at,
      updatedAt: at,
      closedAt: null,
      comments: [],
      mergedPr: null,
      mergedPrRepo: null,
      eventsBefore: 0,
      isPr: o.isPr === true,
      author: o.author ?? 'OWNER',
    });
  }

  /** Its title or body edited, as its author (or anyone with write access) may. */
  edit(number: number, o: { title?: string; body?: string }): void {
    const issue = this.must(number);
    issue.title = o.title ?? issue.title;
    issue.body = o.body ?? issue.body;
    issue.updatedAt = this.tick();
  }

  /**
   * Closed; by a merged PR (`mergedPr`), of this repository unless `from` names another, with
   * `eventsBefore` labeled events ahead of its cross-reference in the timeline.
   */
  close(
    number: number,
    o: { mergedPr?: number; reason?: 'completed' | 'not_planned'; from?: string; eventsBefore?: number } = {},
  ): void {
    const issue = this.must(number);
    issue.state = 'closed';
    issue.stateReason = o.reason ?? (o.mergedPr === undefined ? 'not_planned' : 'completed');
    issue.mergedPr = o.mergedPr ?? null;
    issue.mergedPrRepo = o.mergedPr === undefined ? null : (o.from ?? this.repo);
    issue.eventsBefore = o.eventsBefore ?? 0;
    issue.closedAt = issue.updatedAt = this.tick();
  }

  reopen(number: number): void {
    const issue = this.must(number);
    issue.state = 'open';
    issue.stateReason = 'reopened';
    issue.closedAt = null;
    issue.updatedAt = this.tick();
  }

  /** Deleted: no longer listed, and every request on it answers 410 Gone, as GitHub does. */
  delete(number: number): void {
    this.must(number);
    this.deleted.add(number);
  }

  setLabels(number: number, labels: string[]): void {
    const issue = this.must(number);
    issue.labels = [...labels];
    issue.updatedAt = this.tick();
  }

  private record(issue: StoredIssue): void {
    this.history.set(issue.number, [...(this.history.get(issue.number) ?? []), [...issue.labels].sort()]);
  }

  labels(number: number): string[] {
    return [...this.must(number).labels].sort();
  }

  comments(number: number): string[] {
    return this.must(number).comments.map((c) => c.body);
  }

  private must(number: number): StoredIssue {
    const issue = this.issues.get(number);
    if (issue === undefined) throw new Error(`no issue ${number}`);
    return issue;
  }

  /** The issue as GitHub's REST API shows it (components/schemas/issue). */
  issueJson(issue: StoredIssue, repo = this.repo): Record<string, unknown> {
    const api = `${this.url}/repos/${repo}`;
    return {
      id: 1000 + issue.number,
      node_id: `I_${issue.number}`,
      url: `${api}/issues/${issue.number}`,
      repository_url: api,
      labels_url: `${api}/issues/${issue.number}/labels{/name}`,
      comments_url: `${api}/issues/${issue.number}/comments`,
      events_url: `${api}/issues/${issue.number}/events`,
      html_url: `https://github.example/${repo}/${issue.isPr ? 'pull' : 'issues'}/${issue.number}`,
      number: issue.number,
      state: issue.state,
      ...(issue.stateReason === null ? {} : { state_reason: issue.stateReason }),
      title: issue.title,
      body: issue.body,
      user: USER(this.url),
      labels: issue.labels.map((name) => this.labelJson(name)),
      assignee: null,
      assignees: [],
      milestone: null,
      locked: false,
      active_lock_reason: null,
      comments: issue.comments.length,
      ...(issue.isPr
        ? {
            pull_request: {
              url: `${api}/pulls/${issue.number}`,
              html_url: `https://github.example/${repo}/pull/${issue.number}`,
              diff_url: `https://github.example/${repo}/pull/${issue.number}.diff`,
              patch_url: `https://github.example/${repo}/pull/${issue.number}.patch`,
              merged_at: null,
            },
          }
        : {}),
      closed_at: issue.closedAt,
      created_at: issue.createdAt,
      updated_at: issue.updatedAt,
      author_association: issue.author,
    };
  }

  private labelJson(name: string): Record<string, unknown> {
    const id = Number.parseInt(createHash('sha1').update(name).digest('hex').slice(0, 8), 16);
    return {
      id,
      node_id: `LA_${id}`,
      url: `${this.url}/repos/${this.repo}/labels/${encodeURIComponent(name)}`,
      name,
      description: null,
      color: 'ededed',
      default: false,
    };
  }

  /** The whole timeline, oldest first; `timeline` serves it a page at a time. */
  private timelineJson(issue: StoredIssue): unknown[] {
    if (issue.state !== 'closed') return [];
    const events: unknown[] = [];
    for (let i = 1; i <= issue.eventsBefore; i++) {
      const id = 100_000 * issue.number + i;
      events.push({
        id,
        node_id: `LE_${id}`,
        url: `${this.url}/repos/${this.repo}/issues/events/${id}`,
        actor: USER(this.url),
        event: 'labeled',
        commit_id: null,
        commit_url: null,
        created_at: issue.createdAt,
        performed_via_github_app: null,
        label: { name: `triage-${i}`, color: 'ededed' },
      });
    }
    if (issue.mergedPr !== null) {
      const from = issue.mergedPrRepo ?? this.repo;
      const pr = this.issueJson({ ...issue, number: issue.mergedPr, isPr: true, labels: [] }, from);
      (pr['pull_request'] as Record<string, unknown>)['merged_at'] = issue.closedAt;
      pr['repository'] = repositoryJson(this.url, from, USER(this.url), from !== this.repo);
      events.push({
        event: 'cross-referenced',
        actor: USER(this.url),
        created_at: issue.closedAt,
        updated_at: issue.closedAt,
        source: { type: 'issue', issue: pr },
      });
    }
    events.push({
      id: 5000 + issue.number,
      node_id: `CE_${issue.number}`,
      url: `${this.url}/repos/${this.repo}/issues/events/${5000 + issue.number}`,
      actor: USER(this.url),
      event: 'closed',
      commit_id: null,
      commit_url: null,
      created_at: issue.closedAt,
      performed_via_github_app: null,
      state_reason: issue.stateReason,
    });
    return events;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    this.authorizations.push(String(req.headers.authorization ?? ''));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const input = chunks.length === 0 ? {} : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const listing = method === 'GET' && /^\/repos\/[^/]+\/[^/]+\/issues$/.test(url.pathname);
    const timeline = method === 'GET' && /^\/repos\/[^/]+\/[^/]+\/issues\/\d+\/timeline$/.test(url.pathname);
    const fault =
      this.faults.shift() ?? this.down ?? (listing ? this.listDown : timeline ? this.timelineDown : null);
    if (fault !== null && fault !== undefined) return this.fault(fault, method, url.pathname, res);
    const routed = this.route(method, url, input as Record<string, unknown>);
    if (this.late?.test(`${method} ${url.pathname}${url.search}`) === true) return;
    const body = JSON.stringify(routed.body);
    const etag = `"${createHash('sha1').update(body).digest('hex')}"`;
    if (method === 'GET' && routed.status === 200 && req.headers['if-none-match'] === etag) {
      this.send(res, method, routed.route, 304, undefined, {});
      return;
    }
    const headers = method === 'GET' ? { etag, ...routed.headers } : {};
    this.send(res, method, routed.route, routed.status, routed.body, headers);
  }

  private fault(fault: Fault, method: string, path: string, res: ServerResponse): void {
    const route = this.template(path);
    if (fault === 'timeout') return; // never answered: the client's timeout fires
    const error = (message: string) => ({
      message,
      documentation_url: 'https://docs.github.com/rest',
    });
    if (fault === '500') {
      this.send(res, method, route, 500, error('Server Error'), {});
    } else if (fault === 'primary') {
      const reset = String(Math.ceil(Date.now() / 1000) + this.rateLimit.liftsInS);
      const headers = {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-limit': '5000',
        'x-ratelimit-reset': reset,
      };
      this.send(res, method, route, this.rateLimit.status, error('API rate limit exceeded'), headers);
    } else {
      const body = error(
        'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
      );
      const after = String(this.rateLimit.liftsInS);
      this.send(res, method, route, this.rateLimit.status, body, { 'retry-after': after });
    }
  }

  private send(
    res: ServerResponse,
    method: string,
    route: string,
    status: number,
    body: unknown,
    headers: Record<string, string>,
  ): void {
    const r = { method, route, status, body };
    this.sent.push(r);
    this.onResponse(r);
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, {
      ...headers,
      ...(text === '' ? {} : { 'content-type': 'application/json; charset=utf-8' }),
    });
    res.end(text);
  }

  private template(path: string): string {
    return path
      .replace(/^\/repos\/[^/]+\/[^/]+/, '/repos/{owner}/{repo}')
      .replace(/\/issues\/\d+/, '/issues/{issue_number}')
      .replace(/\/labels\/[^/]+$/, '/labels/{name}');
  }

  private route(
    method: string,
    url: URL,
    input: Record<string, unknown>,
  ): { route: string; status: number; body: unknown; headers?: Record<string, string> } {
    const route = this.template(url.pathname);
    const prefix = `/repos/${this.repo}`;
    const notFound = {
      route,
      status: 404,
      body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' },
    };
    if (method === 'GET' && route === '/user' && this.appToken) {
      const body = {
        message: 'Resource not accessible by integration',
        documentation_url: 'https://docs.github.com/rest/users/users#get-the-authenticated-user',
        status: '403',
      };
      return { route, status: 403, body };
    }
    if (method === 'GET' && route === '/user') return { route, status: 200, body: this.userJson() };
    // GitHub's owner and repository names are case-insensitive: /repos/Acme/API is acme/api.
    if (!url.pathname.toLowerCase().startsWith(`${prefix}/issues`.toLowerCase())) return notFound;
    const m = /\/issues\/(\d+)/.exec(url.pathname);
    const issue = m === null ? undefined : this.issues.get(Number(m[1]));
    if (m !== null && issue === undefined) return notFound;
    if (method === 'GET' && route === '/repos/{owner}/{repo}/issues')
      return { route, status: 200, body: this.list(url) };
    if (issue === undefined) return notFound;
    if (this.deleted.has(issue.number) || this.issuesDisabled) {
      const message = this.issuesDisabled ? 'Issues are disabled for this repo' : 'This issue was deleted';
      return { route, status: 410, body: { message, documentation_url: 'https://docs.github.com/rest' } };
    }
    switch (`${method} ${route}`) {
      case 'GET /repos/{owner}/{repo}/issues/{issue_number}':
        return { route, status: 200, body: this.issueJson(issue) };
      case 'GET /repos/{owner}/{repo}/issues/{issue_number}/timeline':
        return { route, status: 200, ...this.page(url, this.timelineJson(issue)) };
      case 'POST /repos/{owner}/{repo}/issues/{issue_number}/labels': {
        const add = (input['labels'] as string[] | undefined) ?? [];
        issue.labels = [...new Set([...issue.labels, ...add])];
        issue.updatedAt = this.tick();
        this.record(issue);
        return { route, status: 200, body: issue.labels.map((l) => this.labelJson(l)) };
      }
      case 'DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}': {
        const name = decodeURIComponent(url.pathname.split('/').at(-1) ?? '');
        if (!issue.labels.includes(name))
          return {
            ...notFound,
            body: { message: 'Label does not exist', documentation_url: 'https://docs.github.com/rest' },
          };
        issue.labels = issue.labels.filter((l) => l !== name);
        issue.updatedAt = this.tick();
        this.record(issue);
        return { route, status: 200, body: issue.labels.map((l) => this.labelJson(l)) };
      }
      case 'GET /repos/{owner}/{repo}/issues/{issue_number}/comments':
        return { route, status: 200, body: issue.comments.map((c) => this.commentJson(issue, c)) };
      case 'POST /repos/{owner}/{repo}/issues/{issue_number}/comments': {
        const c = {
          id: this.nextComment++,
          body: typeof input['body'] === 'string' ? input['body'] : '',
          at: this.tick(),
          by: this.commenter,
        };
        issue.comments.push(c);
        issue.updatedAt = c.at;
        return { route, status: 201, body: this.commentJson(issue, c) };
      }
      default:
        return notFound;
    }
  }

  /** `GET /user` of the token's user, as GitHub answers another's view of it (public-user). */
  private userJson(): Record<string, unknown> {
    const none = { bio: null, blog: null, company: null, email: null, hireable: null, location: null };
    const at = '2020-01-01T00:00:00Z';
    return {
      ...USER(this.url),
      ...none,
      name: null,
      followers: 0,
      following: 0,
      public_gists: 0,
      public_repos: 0,
      created_at: at,
      updated_at: at,
      user_view_type: 'public',
    };
  }

  private commentJson(
    issue: StoredIssue,
    c: { id: number; body: string; at: string; by: string },
  ): Record<string, unknown> {
    return {
      id: c.id,
      node_id: `IC_${c.id}`,
      url: `${this.url}/repos/${this.repo}/issues/comments/${c.id}`,
      html_url: `https://github.example/${this.repo}/issues/${issue.number}#issuecomment-${c.id}`,
      body: c.body,
      user: { ...USER(this.url), login: c.by, type: c.by.endsWith('[bot]') ? 'Bot' : 'User' },
      created_at: c.at,
      updated_at: c.at,
      issue_url: `${this.url}/repos/${this.repo}/issues/${issue.number}`,
      author_association: 'OWNER',
      performed_via_github_app: null,
    };
  }

  /**
   * One page of a paginated list, as GitHub serves it: per_page (30 by default, at most 100) and
   * page, and a Link header naming the first, previous, next and last pages that exist.
   */
  private page(url: URL, all: readonly unknown[]): { body: unknown[]; headers: Record<string, string> } {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30)));
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1));
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const at = (n: number) => {
      const to = new URL(url.href, this.url);
      to.searchParams.set('page', String(n));
      return `<${this.url}${to.pathname}${to.search}>`;
    };
    const links = [
      ...(page > 1 ? [`${at(page - 1)}; rel="prev"`] : []),
      ...(page < last ? [`${at(page + 1)}; rel="next"`, `${at(last)}; rel="last"`] : []),
      ...(page > 1 ? [`${at(1)}; rel="first"`] : []),
    ];
    const body = all.slice((page - 1) * perPage, page * perPage);
    return { body, headers: links.length === 0 ? {} : { link: links.join(', ') } };
  }

  /** GET /issues: state, since, sort=updated, direction, per_page and page, as GitHub reads them. */
  private list(url: URL): unknown[] {
    const q = url.searchParams;
    const state = q.get('state') ?? 'open';
    const since = q.get('since');
    const asc = q.get('direction') === 'asc';
    const perPage = Math.min(100, Number(q.get('per_page') ?? 30));
    const page = Number(q.get('page') ?? 1);
    const all = [...this.issues.values()]
      .filter((i) => !this.deleted.has(i.number))
      .filter((i) => state === 'all' || i.state === state)
      .filter((i) => since === null || i.updatedAt >= since)
      .sort((a, b) => (asc ? 1 : -1) * (a.updatedAt.localeCompare(b.updatedAt) || a.number - b.number));
    return all.slice((page - 1) * perPage, page * perPage).map((i) => this.issueJson(i));
  }
}
