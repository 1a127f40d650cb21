/**
 * `POST /v1/github/webhook`: GitHub's issue and pull-request events, applied at once instead of at
 * the next poll. The body is verified against `x-hub-signature-256` with the secret
 * (GITHUB_WEBHOOK_SECRET) before anything is parsed; a missing or bad signature gets 401 and
 * changes nothing. The body is JSON (Content type application/json) or GitHub's default form
 * encoding, the JSON in its `payload` field; the signature is over the body as sent, either way.
 * The fields Baton reads are checked (payload.ts): a delivery of the wrong shape gets 400 naming
 * the field, and changes nothing, GitHub not even asked. A verified event is applied like a sync
 * page's issue (apply.ts), so a delivery GitHub repeats changes nothing the second time. The event
 * is a hint, not the state: the issue is read again from GitHub (a conditional GET) and that is
 * applied, so a delivery that arrives late or out of order, or is replayed, applies the issue as
 * it is now, never as it was. An issue the sync would not import (`--github-label`) is not added
 * by a delivery either.
 *
 *   issues (any action)          → the issue read and applied to its task (closed: the job cancelled;
 *                                   deleted, GitHub answering 410: the task closed)
 *   pull_request closed + merged → each issue the PR says it closes ("fixes #N") read and applied
 *                                   as an issues event's (the label filter; a PR or an unknown
 *                                   number passed over; deleted: closed), each on its own
 *   ping, anything else          → 202, nothing done
 *
 * GitHub gives a delivery 10 s to be answered 2xx, else records it failed and does not send it
 * again on its own (its docs: "Best practices for using webhooks", "Handling failed webhook
 * deliveries"). So the routes' client never waits a rate limit (backlog.ts): a delivery that meets
 * the token's limit spent is answered 202 at once, `deferred`, with one log line naming the limit
 * and its reset; the change is on GitHub, newer than the sync's cursor, and the next sync after
 * the reset reads and applies it (a merged PR's issues applied before the limit stay applied).
 * Not an issue `deleted` or `reopened`, which no sync sees (a deleted issue is on no page; a
 * reopen of a task finished in Baton is told only by the delivery's action): answered 503 at once,
 * logged, so GitHub records it failed and a person redelivers it after the reset.
 *
 * A sub-app: the server mounts it with `app.route('/', githubWebhookRoutes(deps))`.
 */
import { Webhooks } from '@octokit/webhooks';
import { Hono } from 'hono';
import { BatonError, GithubUnavailableError } from '../core/errors.js';
import { type RepoName, issueKey, sameRepo } from '../core/github.js';
import { GithubNotFoundError, IssueGoneError } from './errors.js';
import { GithubRateLimitedError } from './rate-limit.js';
import { readDelivery, type Delivery, type Read } from './payload.js';
import { applyGone, applyIssue, type Applied, type BacklogDeps } from './apply.js';
import { wanted } from './sync.js';

export interface WebhookDeps extends BacklogDeps {
  readonly repo: RepoName;
  /** GITHUB_WEBHOOK_SECRET. */
  readonly secret: string;
  /** The sync's label filter (`--github-label`): only issues with one of them are added; none, all. */
  readonly importLabels?: readonly string[];
}

const STATUS: Partial<Record<string, 400 | 404 | 409 | 503>> = {
  invalid_input: 400,
  not_found: 404,
  store_unavailable: 503,
  github_unavailable: 503,
};

/** The API's error body (src/http/errors.ts): {"error": {"code", "message", "hint", "details"}}. */
function failure(code: string, message: string, hint: string | null) {
  return { error: { code, message, hint, details: {} } };
}

/** Issue numbers a pull request's text says it closes (GitHub's closing keywords). */
export function closingReferences(text: string): number[] {
  const found = [
    ...text.matchAll(/\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#([1-9][0-9]{0,9})\b/gi),
  ];
  return [...new Set(found.map((match) => Number(match[1])))];
}

export function githubWebhookRoutes(deps: WebhookDeps): Hono {
  const webhooks = new Webhooks({ secret: deps.secret });
  const app = new Hono();
  app.post('/v1/github/webhook', async (context) => {
    const body = await context.req.text();
    const signature = context.req.header('x-hub-signature-256') ?? '';
    const ok = signature !== '' && (await webhooks.verify(body, signature).catch(() => false));
    if (!ok) {
      const message = 'the webhook signature is missing or does not match';
      return context.json(
        failure('unauthorized', message, 'set the same secret on GitHub and in GITHUB_WEBHOOK_SECRET'),
        401,
      );
    }
    const event = context.req.header('x-github-event') ?? '';
    const parsed = payloadOf(context.req.header('content-type') ?? '', body);
    const delivery = parsed.ok ? readDelivery(event, parsed.value) : parsed;
    if (!delivery.ok) {
      const hint = parsed.ok
        ? `send ${event === '' ? 'the event' : `the ${event} event`} as GitHub sends it: Baton reads this field`
        : FORMATS;
      return context.json(failure('invalid_input', delivery.problem, hint), 400);
    }
    if (!sameRepo(delivery.value.repository ?? '', deps.repo.full)) {
      return context.json({ ok: true, ignored: `not ${deps.repo.full}` }, 202);
    }
    try {
      const applied = await handle(deps, delivery.value);
      return applied === null
        ? context.json({ ok: true, ignored: event }, 202)
        : context.json({ ok: true, applied });
    } catch (error) {
      if (error instanceof Deferred) return context.json(deferral(deps, error), 202);
      if (!(error instanceof BatonError)) throw error;
      const status = STATUS[error.code] ?? 409;
      return context.json(failure(error.code, error.message, error.hint ?? null), status);
    }
  });
  return app;
}

async function handle(deps: WebhookDeps, delivery: Delivery): Promise<readonly Applied[] | null> {
  if (delivery.kind === 'issue') {
    if (delivery.isPullRequest) return null;
    const { number, reopened, deleted } = delivery;
    return applyNumber(deps, number, reopened).catch((error: unknown) => {
      if (!(error instanceof GithubRateLimitedError)) throw error;
      if (reopened || deleted) throw unseenBySync(deps, number, deleted ? 'deleted' : 'reopened', error);
      throw new Deferred([], [number], error);
    });
  }
  if (delivery.kind === 'merged') return applyReferences(deps, closingReferences(delivery.text));
  return null;
}

/**
 * The issue read again and applied as the sync would: one the label filter leaves out is not
 * added, a pull request is passed over, a deleted one (410) closes its task.
 */
async function applyNumber(
  deps: WebhookDeps,
  number: number,
  reopened: boolean,
): Promise<readonly Applied[]> {
  const issue = await deps.api.issue(deps.repo, number).catch((error: unknown) => {
    if (error instanceof IssueGoneError) return null;
    throw error;
  });
  if (issue === null) return applyGone(deps, issueKey(deps.repo, number));
  if (issue.isPullRequest) return ['skipped'];
  return applyIssue(deps, deps.repo, issue, { mayAdd: wanted(issue, deps.importLabels ?? []), reopened });
}

/**
 * Each issue a merged pull request says it closes, on its own: one GitHub does not know (404) is
 * passed over and logged; one GitHub failed to answer is named in the 503 after the others are
 * applied (applying them again changes nothing, so the delivery may be redelivered).
 */
async function applyReferences(deps: WebhookDeps, numbers: readonly number[]): Promise<readonly Applied[]> {
  const out: Applied[] = [];
  const failed: string[] = [];
  for (const [at, number] of numbers.entries()) {
    try {
      out.push(...(await applyNumber(deps, number, false)));
    } catch (error) {
      // The limit is the token's: the issues left would meet it too.
      if (error instanceof GithubRateLimitedError) throw new Deferred(out, numbers.slice(at), error);
      if (!(error instanceof GithubUnavailableError)) throw error;
      if (error instanceof GithubNotFoundError) {
        deps.log(
          `${issueKey(deps.repo, number)}: named by a merged pull request, not found on GitHub; passed over`,
        );
        out.push('skipped');
      } else failed.push(`#${number} (${error.message})`);
    }
  }
  if (failed.length > 0) {
    throw new GithubUnavailableError(
      `GitHub did not answer for ${failed.join(', ')}; the pull request's other issues were applied`,
      "redeliver it from the webhook's Recent Deliveries, or let the next sync apply them",
    );
  }
  return out;
}

/** A delivery's issues left to the next sync: the token's rate limit is spent. */
class Deferred extends Error {
  constructor(
    readonly applied: readonly Applied[],
    readonly numbers: readonly number[],
    readonly limit: GithubRateLimitedError,
  ) {
    super(limit.message);
  }
}

/**
 * A `deleted` or `reopened` delivery under a spent limit is not deferred: the sync cannot see it (a
 * deleted issue is on no page; a reopen is told from an open issue only by the delivery's action),
 * so it is answered 503 and the delivery stays failed on GitHub, to be redelivered after the reset.
 */
function unseenBySync(
  deps: WebhookDeps,
  number: number,
  action: string,
  limit: GithubRateLimitedError,
): GithubUnavailableError {
  const spent = spentOf(limit);
  const message = `${issueKey(deps.repo, number)} ${action}: not applied, ${spent}; the next sync would not see it`;
  deps.log(`GitHub webhook: ${message}`);
  return new GithubUnavailableError(
    message,
    "redeliver it after the reset from the webhook's Recent Deliveries on GitHub",
  );
}

/** What a webhook's log and answer say of the limit met. */
function spentOf({ kind, resetAt }: GithubRateLimitedError): string {
  return `the token's ${kind} rate limit is spent ${resetAt === null ? 'for a while' : `until ${resetAt}`}`;
}

/** The 202 of a deferred delivery, said once in the log with the limit and its reset. */
function deferral(deps: WebhookDeps, deferred: Deferred) {
  const keys = deferred.numbers.map((number) => issueKey(deps.repo, number));
  const spent = spentOf(deferred.limit);
  deps.log(`GitHub webhook: ${keys.join(', ')} left to the next sync: ${spent}`);
  const message = `${spent}; the next sync after it lifts applies the change`;
  return { ok: true, applied: deferred.applied, deferred: keys, message };
}

/** The two content types GitHub offers for a webhook, said when a body is neither. */
const FORMATS =
  "set the webhook's Content type on GitHub to application/json (or leave it " +
  'application/x-www-form-urlencoded, the JSON in its payload field)';

/**
 * The delivery's JSON: the body itself (Content type application/json), or its `payload` field
 * (application/x-www-form-urlencoded, GitHub's default). Either way the signature was checked over
 * the body as sent, before this.
 */
function payloadOf(contentType: string, body: string): Read<unknown> {
  const form = contentType.split(';')[0]?.trim().toLowerCase() === 'application/x-www-form-urlencoded';
  const text = form ? new URLSearchParams(body).get('payload') : body;
  if (text === null) return { ok: false, problem: 'the form body has no payload field' };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    const why = error instanceof SyntaxError ? `: ${error.message.split('\n')[0] ?? ''}` : '';
    return { ok: false, problem: `${form ? 'the payload field' : 'the body'} is not JSON${why}` };
  }
}
