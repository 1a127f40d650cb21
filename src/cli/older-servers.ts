/**
 * Answers of an older `baton serve` or `baton up`, read by a newer CLI over the API: what a field
 * the older server does not send means, or a line saying the server cannot do what was asked.
 */
import { InvalidInputError } from '../core/errors.js';
import type { TaskListInput } from '../coordinator/inputs.js';
import type { AuditEntry } from '../core/audit-event.js';
import type { ListedTask } from '../store/store.js';
import type { Host, HostToggle } from '../store/dispatch-store.js';
import type { Token } from '../core/token.js';

/**
 * GET /v1/tasks: a server from before task dependencies sends no waitsFor and ignores `blocked`;
 * one from before paging ignores `after`.
 */
export function listedTasks(
  tasks: readonly (Omit<ListedTask, 'waitsFor'> & { readonly waitsFor?: readonly string[] })[],
  input: TaskListInput,
): ListedTask[] {
  if (input.blocked !== undefined && tasks.some((task) => task.waitsFor === undefined)) {
    throw new InvalidInputError(
      'the API server predates task dependencies: it cannot list by --blocked',
      'upgrade baton where `baton serve` or `baton up` runs, or use --db',
    );
  }
  // A server from before task list paging ignores `after` and answers the first page again, which
  // holds the key a next-page line names (the last of that page): a script following those lines
  // would loop (decision 0045).
  if (input.after !== undefined && tasks.some((task) => task.key === input.after)) {
    throw new InvalidInputError(
      'the API server predates task list paging: it answered the first page again for --after',
      'upgrade baton where `baton serve` or `baton up` runs, or use --db',
    );
  }
  return tasks.map((task) => ({ ...task, waitsFor: task.waitsFor ?? [] }));
}

/**
 * GET /v1/audit: a server from before the `token` filter ignores it (unknown query parameters of a
 * read are) and answers every row; a row of another token proves it, and a leak's inquiry would
 * otherwise take every row for the leaked token's doing.
 */
export function auditByToken(entries: readonly AuditEntry[], token: unknown): readonly AuditEntry[] {
  if (token !== undefined && entries.some((entry) => entry.token !== token)) {
    throw new InvalidInputError(
      'the API server predates `baton audit --by-token`: it answered rows of other tokens',
      'upgrade baton where `baton serve` or `baton up` runs, or use --db',
    );
  }
  return entries;
}

/**
 * POST /v1/hosts/{name}/enable|disable: the host and whether it changed; a server from before
 * `changed` sends the host alone, having written its row every time: changed.
 */
export function hostToggled(body: Readonly<Record<string, unknown>>): HostToggle {
  const { changed, ...host } = body;
  return { host: host as unknown as Host, changed: changed !== false };
}

/**
 * GET /v1/tokens and POST /v1/tokens/{id}/revoke: a server from before `revokedBy` sends no revoker;
 * read as null, named by nobody, as a revocation that named nobody is. One from before dashboard
 * sign-ins had their own tokens (`loginOf`) made none: null.
 */
export function listedToken(token: Readonly<Record<string, unknown>>): Token {
  return {
    ...token,
    revokedBy: token['revokedBy'] ?? null,
    loginOf: token['loginOf'] ?? null,
  } as unknown as Token;
}
