/**
 * The GitHub backlog of one repository, wired: the API client (token and base URL from the
 * environment), the store, the label names. What `baton github sync` and `baton up --github`
 * call: a sync pass, a projection pass, the re-check before a run, the webhook routes.
 */
import type { Hono } from 'hono';
import { githubWebhookRoutes } from './webhook.js';
import { InvalidInputError } from '../core/errors.js';
import {
  DEFAULT_GITHUB_LABELS,
  type GithubLabels,
  type RepoName,
  validateLabelNames,
  tokenVariable,
} from '../core/github.js';
import type { Job } from '../core/job.js';
import type { Store } from '../store/store.js';
import { DEFAULT_GITHUB_API_URL, GithubApi } from './api.js';
import type { BacklogDeps } from './apply.js';
import { project, type ProjectReport } from './projector.js';
import { recheckIssue, type RecheckOutcome } from './recheck.js';
import { syncRepo, type SyncOptions, type SyncReport } from './sync.js';

export interface BacklogOptions {
  readonly store: Store;
  readonly repo: RepoName;
  /** The variable holding the token: GITHUB_TOKEN unless --token-env names another. */
  readonly tokenEnv?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly labels?: Partial<GithubLabels> | undefined;
  /** Post escalation reasons, review rejections and resolve notes as comments (default true). */
  readonly comments?: boolean | undefined;
  /** Whose issues are imported (`--github-authors`, trust.ts); OWNER, MEMBER and COLLABORATOR by default. */
  readonly authors?: ReadonlySet<string> | undefined;
  readonly log: (line: string) => void;
}

export interface Backlog {
  readonly repo: RepoName;
  readonly deps: BacklogDeps;
  /** A pass; `options.signal` (a stop) ends it at once, even in a rate limit's wait (GithubStoppedError). */
  sync(options: SyncOptions): Promise<SyncReport>;
  /** A pass of the label projector; `signal` as the sync's. */
  project(signal?: AbortSignal): Promise<ProjectReport>;
  recheck(job: Pick<Job, 'id' | 'key'>): Promise<RecheckOutcome>;
  /**
   * `POST /v1/github/webhook` for this repository, signed with the secret (webhook.ts); it adds
   * only issues with one of `importLabels` (none: all), as the sync does. Its client never waits a
   * rate limit: GitHub gives a delivery 10 s, and a limited one is left to the next sync.
   */
  webhook(secret: string, importLabels?: readonly string[]): Hono;
}

const positive = (env: BacklogOptions['env'], name: string): number | undefined => {
  const value = Number(env[name]);
  return Number.isFinite(value) && value > 0 ? value : undefined;
};

export function openBacklog(options: BacklogOptions): Backlog {
  const tokenEnv = tokenVariable(options.tokenEnv);
  const token = options.env[tokenEnv] ?? '';
  if (token === '') {
    throw new InvalidInputError(
      `${tokenEnv} is not set: Baton needs a GitHub token to read and label issues`,
      `export ${tokenEnv}=<a token with issues read and write>, or name another variable with --token-env`,
    );
  }
  const labels = validateLabelNames({ ...DEFAULT_GITHUB_LABELS, ...options.labels });
  const retryBaseMs = positive(options.env, 'BATON_GITHUB_RETRY_BASE_MS');
  const apiOptions = {
    token,
    baseUrl: options.env['GITHUB_API_URL'] ?? DEFAULT_GITHUB_API_URL,
    cache: options.store.github,
    timeoutMs: positive(options.env, 'BATON_GITHUB_TIMEOUT_MS'),
    retryBaseMs,
    writePaceMs: positive(options.env, 'BATON_GITHUB_WRITE_PACE_MS'),
    log: options.log,
  };
  const api = new GithubApi(apiOptions);
  const deps: BacklogDeps = {
    store: options.store,
    api,
    labels,
    log: options.log,
    retryBaseMs,
    authors: options.authors,
  };
  // The re-check's own client: a placed job waits on it, so it does not wait out a rate limit.
  const briefApi = new GithubApi({ ...apiOptions, rateLimits: 'brief' });
  const recheckDeps: BacklogDeps = { ...deps, api: briefApi };
  // The webhook's: GitHub gives a delivery 10 s and does not deliver it again on its own.
  const webhookDeps: BacklogDeps = { ...deps, api: new GithubApi({ ...apiOptions, rateLimits: 'never' }) };
  // A pass that a stop may end: its requests and waits on the client bound to the signal.
  const during = (signal: AbortSignal | undefined): BacklogDeps =>
    signal === undefined ? deps : { ...deps, api: api.stoppedBy(signal) };
  const comments = options.comments ?? true;
  return {
    repo: options.repo,
    deps,
    sync: (syncOptions) => syncRepo(during(syncOptions.signal), options.repo, syncOptions),
    project: (signal) => project(during(signal), options.repo, { comments }),
    recheck: (job) => recheckIssue(recheckDeps, job),
    webhook: (secret, importLabels = []) =>
      githubWebhookRoutes({ ...webhookDeps, repo: options.repo, secret, importLabels }),
  };
}
