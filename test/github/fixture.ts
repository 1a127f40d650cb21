/**
 * A store, a GitHub stand-in whose every response is checked against GitHub's OpenAPI
 * description, and the backlog of its repository pointed at it, for the GitHub tests.
 */
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { openBacklog, type Backlog } from '../../src/github/backlog.js';
import { parseAuthors } from '../../src/github/trust.js';
import { parseRepo } from '../../src/core/github.js';
import { handBack, type TestDatabase } from '../support/databases.js';
import { GithubStandIn } from '../support/github-standin.js';
import { OpenApiChecker } from '../support/github-openapi.js';

export const TOKEN = 'ghp_standInToken0123456789abcdefSECRET';
export const REPO = 'acme/api';
export const key = (n: number): string => `github:${REPO}#${n}`;

export interface GithubFixture {
  /** The database's URL, for a `baton` process on it. */
  readonly db: string;
  readonly store: Store;
  readonly gh: GithubStandIn;
  readonly checker: OpenApiChecker;
  readonly backlog: Backlog;
  readonly logs: string[];
  readonly env: Record<string, string>;
  /** A session for claims made by hand in a test. */
  session(): Promise<number>;
  close(): Promise<void>;
}

export async function githubFixture(
  db: TestDatabase,
  o: {
    readonly comments?: boolean;
    /** --github-authors (src/github/trust.ts): members by default. */
    readonly authors?: string;
    /** One request's limit (BATON_GITHUB_TIMEOUT_MS): 400 ms, ample for the local stand-in. */
    readonly timeoutMs?: number;
  } = {},
): Promise<GithubFixture> {
  const url = await db.fresh();
  const store = await openStore(url);
  const checker = new OpenApiChecker().warm();
  const gh = new GithubStandIn(REPO, (r) => void checker.check(r));
  const apiUrl = await gh.start();
  const logs: string[] = [];
  const env = {
    GITHUB_TOKEN: TOKEN,
    GITHUB_API_URL: apiUrl,
    BATON_GITHUB_TIMEOUT_MS: String(o.timeoutMs ?? 400),
    BATON_GITHUB_RETRY_BASE_MS: '20',
    BATON_GITHUB_WRITE_PACE_MS: '20',
  };
  const backlog = openBacklog({
    store,
    repo: parseRepo(REPO),
    env,
    comments: o.comments,
    authors: parseAuthors(o.authors),
    log: (line) => logs.push(line),
  });
  return {
    db: url,
    store,
    gh,
    checker,
    backlog,
    logs,
    env,
    session: async () => (await store.sessions.start({ kind: 'agent', host: 'h', pid: process.pid })).id,
    close: async () => {
      await gh.stop();
      await store.close();
      // As new again, the database may serve the next test of this file (pg-recycle.ts).
      await handBack(db, url);
    },
  };
}

/** Runs the projector until the outbox is empty (failed rows wait out their retry delay). */
export async function drain(f: GithubFixture, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await f.store.github.backlog()) > 0) {
    if (Date.now() > until) throw new Error(`the outbox still holds ${await f.store.github.backlog()} rows`);
    await f.backlog.project();
    if ((await f.store.github.backlog()) > 0) await new Promise((r) => setTimeout(r, 100));
  }
}

/** The task's agent claims it and releases it done, as a run that finished. */
export async function finish(f: GithubFixture, n: number): Promise<void> {
  const session = await f.store.sessions.start({ kind: 'agent', host: 'box', pid: 1 });
  const claimed = await f.store.claims.acquire({ key: key(n), session: session.id });
  assert.ok(claimed.ok);
  await f.store.claims.release({
    key: key(n),
    session: session.id,
    epoch: claimed.claim.epoch,
    outcome: 'done',
  });
  assert.equal((await f.store.tasks.get(key(n)))?.state, 'done');
}
