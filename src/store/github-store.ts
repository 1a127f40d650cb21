/**
 * The part of the port the GitHub backlog uses (docs/decisions/0013-github-backlog.md). The
 * outbox rows themselves are written by the engines' triggers (migration 0015) in the same
 * transaction as the change that makes them necessary; this group reads them for the projector,
 * marks them applied or failed, keeps each repository's sync cursor and the ETag cache of
 * conditional requests, and writes the backlog's own ledger rows.
 */
import type { Instant } from '../core/time.js';
import type { LabelFacts, UnsyncedOutbox } from '../core/github.js';

export type OutboxKind = 'labels' | 'comment';

export interface OutboxRow {
  readonly id: number;
  readonly key: string;
  readonly kind: OutboxKind;
  /** What wrote it: `job:queued`, `claim:granted`, `task:escalated`, `repair`, … */
  readonly cause: string;
  /** A comment's text. */
  readonly body: string | null;
  /** Who made the change a comment tells of, where the row keeps it (a resolve's: migration 0052). */
  readonly actor: string | null;
  readonly createdAt: Instant;
  readonly attempts: number;
  readonly lastError: string | null;
}

export interface OutboxPruneResult {
  /** Applied rows removed by this call. */
  readonly removed: number;
  /** The database's now less the retention: rows applied before it may go. */
  readonly cutoff: Instant;
}

/** What the labels of a task's issue are projected from (core/github.ts), and whose they are. */
export interface LabelState extends LabelFacts {
  readonly key: string;
}

export interface GithubNoteParams {
  readonly type: 'github:label-repaired' | 'github:recheck' | 'github:issue-closed' | 'github:text-changed';
  readonly key: string;
  readonly jobId?: number | undefined;
  readonly detail: Readonly<Record<string, unknown>>;
}

export interface GithubStore {
  readonly github: {
    /**
     * Rows not yet applied whose retry time has come (database clock), oldest first; at most
     * `limit`. A row of an issue that has an earlier row still waiting is left out, so that each
     * issue's rows are applied in order. `prefix`: only tasks whose key starts with it (one
     * repository's). With `key`: every row of that task not yet applied, whatever its retry time.
     */
    pending(params: {
      readonly limit: number;
      readonly prefix?: string | undefined;
      readonly key?: string | undefined;
    }): Promise<readonly OutboxRow[]>;
    /** Marks the rows applied; rows applied already stay as they were (idempotent). */
    applied(ids: readonly number[]): Promise<void>;
    /** Counts a failed attempt on the rows and holds them back for `retryAfterMs`. */
    failed(params: {
      readonly ids: readonly number[];
      readonly error: string;
      readonly retryAfterMs: number;
    }): Promise<void>;
    /**
     * Queues a `labels` row for the task (a label found edited by hand) and writes the
     * `github:label-repaired` ledger row, in one step.
     */
    repair(params: {
      readonly key: string;
      readonly detail: Readonly<Record<string, unknown>>;
    }): Promise<void>;
    /** Writes one of the backlog's ledger rows. */
    note(params: GithubNoteParams): Promise<void>;
    /** What each task's labels are projected from; unknown keys are left out. */
    labelStates(keys: readonly string[]): Promise<readonly LabelState[]>;
    /** The repository's cursor: the newest `updated_at` fully imported, or null before any. */
    cursor(repo: string): Promise<string | null>;
    saveCursor(params: { readonly repo: string; readonly since: string }): Promise<void>;
    /** The cached ETag and body of a GET, or null. */
    cached(url: string): Promise<{ readonly etag: string; readonly body: string } | null>;
    cache(params: { readonly url: string; readonly etag: string; readonly body: string }): Promise<void>;
    /** Rows not yet applied, for status and tests. */
    backlog(): Promise<number>;
    /**
     * Removes up to `limit` rows applied more than `olderThanMs` before the database's now, oldest
     * id first, in one transaction. Never a row not yet applied, however old: it is what GitHub
     * has still to be told (decision 0013, "Retention of applied rows").
     */
    prune(params: { readonly olderThanMs: number; readonly limit: number }): Promise<OutboxPruneResult>;
    /**
     * Rows not yet applied whose key's repository (`github:OWNER/REPO#N`, spelled as in the key) no
     * sync has kept a cursor for, with any label filter: rows nothing may ever apply, by repository
     * (decision 0013, "Keys no sync applies"). Read only, for `baton doctor`.
     */
    unsynced(): Promise<readonly UnsyncedOutbox[]>;
  };
}
