/**
 * The label projector: applies the outbox (migration 0015) to GitHub, on the leader only.
 *
 * Each issue's rows are taken in id order. A run of `labels` rows is applied as one: the
 * projector reads the task's state now (which is at least as new as every row it read), reads
 * the issue's labels (a conditional GET), and adds and removes only the difference among the
 * labels Baton manages, so applying twice is applying once, and a human's other labels are never
 * touched. A `comment` row (an escalation's reason, a rejection's, a resolve's note) is posted
 * with a marker naming the row, at its end; every try first looks for a comment ending with it, so a
 * post whose answer was lost is not posted twice. A failure holds the issue's
 * remaining rows back with a growing delay (the store keeps them; nothing is lost), and the
 * next pass resumes from the same row; an issue deleted on GitHub (410) closes its task and drops
 * its rows instead, which could never apply. A stop (GithubStoppedError) ends the pass and leaves
 * the rows not yet applied untouched.
 */
import {
  type GithubLabels,
  type RepoName,
  desiredLabels,
  GITHUB_KEY_PREFIX,
  labelChanges,
  parseIssueKey,
  sameRepo,
} from '../core/github.js';
import type { OutboxRow } from '../store/github-store.js';
import { applyGone, GONE_REASON, type BacklogDeps } from './apply.js';
import { IssueGoneError } from './errors.js';
import { GithubStoppedError } from './stop.js';

export interface ProjectOptions {
  /** Post escalation reasons, review rejections and resolve notes as issue comments (on by default). */
  readonly comments: boolean;
  readonly batchMax?: number | undefined;
}

export interface ProjectReport {
  readonly applied: number;
  readonly failed: number;
  readonly labelsAdded: number;
  readonly labelsRemoved: number;
  readonly comments: number;
}

const RETRY_MS_MAX = 5 * 60_000;

/**
 * The delay before a row's next try after `attempts` failures: 1 s, 2 s, 4 s, … up to 5 min (with
 * the default base of 1,000 ms; deps.retryBaseMs).
 */
const retryDelayMs = (attempts: number, baseMs = 1000): number =>
  Math.min(RETRY_MS_MAX, baseMs * 2 ** attempts);

export async function project(
  deps: BacklogDeps,
  repo: RepoName,
  options: ProjectOptions,
): Promise<ProjectReport> {
  const report = { applied: 0, failed: 0, labelsAdded: 0, labelsRemoved: 0, comments: 0 };
  const rows = await deps.store.github.pending({
    limit: options.batchMax ?? 200,
    // Keys name their repository in lower case (issueKey), whatever the spelling of --github.
    prefix: `${GITHUB_KEY_PREFIX}${repo.full.toLowerCase()}#`,
  });
  const byKey = new Map<string, OutboxRow[]>();
  for (const row of rows) byKey.set(row.key, [...(byKey.get(row.key) ?? []), row]);
  for (const [key, list] of byKey) {
    const issue = parseIssueKey(key);
    if (issue === null || !sameRepo(issue.repo.full, repo.full)) continue;
    let next = 0;
    try {
      while (next < list.length) {
        const row = list[next] as OutboxRow;
        if (row.kind === 'comment') {
          if (options.comments && (await postComment(deps, issue.repo, issue.issue, row))) report.comments++;
          await deps.store.github.applied([row.id]);
          next++;
          report.applied++;
          continue;
        }
        let runEnd = next;
        while (runEnd < list.length && list[runEnd]?.kind === 'labels') runEnd++;
        const change = await applyLabels(deps, key, issue.repo, issue.issue);
        report.labelsAdded += change.add.length;
        report.labelsRemoved += change.remove.length;
        await deps.store.github.applied(list.slice(next, runEnd).map((labelRow) => labelRow.id));
        report.applied += runEnd - next;
        next = runEnd;
      }
    } catch (error) {
      // A stop is no failure of the rows: they stay as they are, for the next pass (the next leader).
      if (error instanceof GithubStoppedError) throw error;
      const left = list.slice(next);
      if (error instanceof IssueGoneError) {
        // Deleted on GitHub: nothing of it can ever apply. Its task is closed, its rows dropped.
        await applyGone(deps, key);
        await deps.store.github.applied(left.map((row) => row.id));
        deps.log(`${key}: ${GONE_REASON}; ${left.length} label or comment change(s) dropped`);
        continue;
      }
      const attempts = Math.max(...left.map((row) => row.attempts));
      const message = error instanceof Error ? error.message : String(error);
      const delayMs = retryDelayMs(attempts, deps.retryBaseMs);
      await deps.store.github.failed({
        ids: left.map((row) => row.id),
        error: message,
        retryAfterMs: delayMs,
      });
      report.failed += left.length;
      deps.log(`${key}: labels not projected yet (${message}); retrying in ${delayMs / 1000} s`);
    }
  }
  return report;
}

async function applyLabels(
  deps: BacklogDeps,
  key: string,
  repo: RepoName,
  number: number,
): Promise<{ add: readonly string[]; remove: readonly string[] }> {
  const [facts] = await deps.store.github.labelStates([key]);
  if (facts === undefined) return { add: [], remove: [] };
  const desired = desiredLabels(facts, deps.labels);
  const current = (await deps.api.issue(repo, number)).labels;
  const change = labelChanges(current, desired, deps.labels);
  if (change.add.length > 0) await deps.api.addLabels(repo, number, change.add);
  for (const label of change.remove) await deps.api.removeLabel(repo, number, label);
  return change;
}

/**
 * Posts the row's comment unless an earlier try already did (its answer lost, or the process gone
 * before it marked the row applied: so the look comes before every post); true when posted.
 */
async function postComment(
  deps: BacklogDeps,
  repo: RepoName,
  number: number,
  row: OutboxRow,
): Promise<boolean> {
  const marker = `<!-- baton:outbox:${row.id} -->`;
  if (await deps.api.hasComment(repo, number, marker, row.createdAt)) return false;
  await deps.api.comment(repo, number, `${commentText(row, deps.labels)}\n\n${marker}`);
  return true;
}

function commentText(row: OutboxRow, labels: GithubLabels): string {
  const body = row.body ?? '';
  switch (row.cause) {
    case 'task:rejected':
      return `**Baton: review rejected.** ${body}\n\nThe next run is given this reason as its feedback.`;
    case 'task:resolved':
      return resolvedText(body, row.actor);
    default:
      return (
        `**Baton: handed to a human** (\`${labels.human}\`): ${body}\n\n` +
        `When it is sorted out: \`baton resolve ${row.key} --note "..."\`.`
      );
  }
}

/**
 * A resolve's note (migration 0052), shown verbatim in a code block: it is exactly what the next
 * run is given as BATON_FEEDBACK, and nothing in it acts on GitHub (no @mention notifies anyone, no
 * #N links another issue, no image is fetched, no HTML or marker hides), since whoever may resolve
 * through Baton need not be someone who may speak on the issue, and the post goes with Baton's token
 * (docs/decisions/0062, amendment "the note on GitHub"). Who resolved is shown as code likewise.
 */
function resolvedText(note: string, actor: string | null): string {
  const who = actor === null ? '' : ` by ${codeSpan(actor)}`;
  return `**Baton: resolved${who}.** The next run is given this note as its feedback:\n\n${codeBlock(note)}`;
}

/** The longest run of backticks in `text`: a fence or span one longer cannot be closed inside it. */
const longestTicks = (text: string): number =>
  Math.max(0, ...[...text.matchAll(/`+/g)].map((run) => run[0].length));

const codeBlock = (text: string): string => {
  const fence = '`'.repeat(Math.max(3, longestTicks(text) + 1));
  return `${fence}text\n${text}\n${fence}`;
};

const codeSpan = (text: string): string => {
  const ticks = '`'.repeat(longestTicks(text) + 1);
  return `${ticks} ${text} ${ticks}`;
};
