/**
 * The re-check at claim time: before the runner spawns an agent for a `github:` task, it reads
 * the issue again with one conditional request. A closed issue closes the task (done when a
 * merged pull request references it; that takes one more request, the issue's timeline), which
 * cancels the job with the reason, and nothing is spawned. GitHub closes an issue when a pull
 * request that says it fixes the issue is merged, so "a linked PR is already merged" is a closed
 * issue here; so is a deleted one (410 Gone). GitHub unreachable: the run goes ahead, and the
 * ledger says it was not re-checked.
 *
 * An open issue whose title or body changed, its author not a member, is applied first (which
 * gates the task: apply.ts holdEditedText); a task behind a gate now (set after its job was placed)
 * does not run: the job is cancelled with the reason, so no agent is given text no trusted human
 * saw. Once approved, the task is queued again by hand.
 */
import { GithubUnavailableError } from '../core/errors.js';
import { parseIssueKey } from '../core/github.js';
import type { Job } from '../core/job.js';
import { applyGone, applyIssue, EDITED_REASON, GONE_REASON, textChanged, type BacklogDeps } from './apply.js';
import { authorTrusted, MEMBERS } from './trust.js';
import { IssueGoneError } from './errors.js';
import { GithubRateLimitedError } from './rate-limit.js';

export type RecheckOutcome =
  { readonly go: true; readonly checked: boolean } | { readonly go: false; readonly reason: string };

export async function recheckIssue(deps: BacklogDeps, job: Pick<Job, 'id' | 'key'>): Promise<RecheckOutcome> {
  const parsed = parseIssueKey(job.key);
  if (parsed === null) return { go: true, checked: false };
  const note = (detail: Record<string, unknown>) =>
    deps.store.github.note({ type: 'github:recheck', key: job.key, jobId: job.id, detail });
  let state: 'open' | 'closed';
  try {
    const issue = await deps.api.issue(parsed.repo, parsed.issue);
    state = issue.state;
    if (state === 'closed') {
      const unsettled = await settleClosed(deps, parsed.repo, issue);
      if (unsettled !== null) {
        // Known closed, its verdict (done by a merged pull request, or closed) not read: no agent
        // runs on it; the task is left to the sync, which waits the limit out.
        const reason = `issue closed on GitHub (not settled: ${unsettled}; the next sync settles the task)`;
        await note({ checked: true, state, outcome: 'cancelled', reason });
        return { go: false, reason };
      }
      const task = await deps.store.tasks.get(job.key);
      const reason = task?.stateReason ?? 'issue closed on GitHub';
      await note({ checked: true, state, outcome: 'cancelled', reason });
      return { go: false, reason };
    }
    const held = await gatedNow(deps, parsed.repo, issue, job.key);
    if (held !== null) {
      await note({ checked: true, state, outcome: 'cancelled', reason: held });
      return { go: false, reason: held };
    }
  } catch (error) {
    if (error instanceof IssueGoneError) {
      await applyGone(deps, job.key);
      await note({ checked: true, state: 'deleted', outcome: 'cancelled', reason: GONE_REASON });
      return { go: false, reason: GONE_REASON };
    }
    if (error instanceof GithubRateLimitedError) {
      const { kind, resetAt } = error;
      await note({
        checked: false,
        outcome: 'run',
        reason: 'rate-limited',
        limit: kind,
        resetAt,
        error: error.message,
      });
      const until = resetAt === null ? '' : ` until ${resetAt}`;
      deps.log(
        `job ${job.id} ${job.key}: not re-checked on GitHub: the token's ${kind} rate limit is spent${until}; ` +
          "running it on the issue's last known state (open)",
      );
      return { go: true, checked: false };
    }
    const message = error instanceof Error ? error.message : String(error);
    await note({ checked: false, outcome: 'run', error: message });
    deps.log(`job ${job.id} ${job.key}: not re-checked on GitHub (${message}); running it`);
    return { go: true, checked: false };
  }
  await note({ checked: true, state, outcome: 'run' });
  return { go: true, checked: true };
}

/** Why the open issue's task may not run now (it is gated, maybe just now by an edit), else null. */
async function gatedNow(
  deps: BacklogDeps,
  repo: Parameters<typeof applyIssue>[1],
  issue: Parameters<typeof applyIssue>[2],
  key: string,
): Promise<string | null> {
  let task = await deps.store.tasks.get(key);
  if (task === null) return null;
  const edited =
    task.gate === null && !authorTrusted(issue.authorAssociation, MEMBERS) && textChanged(task, issue);
  if (edited) {
    await applyIssue(deps, repo, issue);
    task = await deps.store.tasks.get(key);
  }
  if (task === null || task.gate === null) return null;
  return (
    `the task waits behind the ${task.gate} gate, set after its job was placed` +
    `${edited ? ` (${EDITED_REASON})` : ''}; approve it (baton approve ${key} --gate ${task.gate}) and queue it again`
  );
}

/** Applies a closed issue to its task; null once applied, else why GitHub's part failed. */
async function settleClosed(
  deps: BacklogDeps,
  repo: Parameters<typeof applyIssue>[1],
  issue: Parameters<typeof applyIssue>[2],
): Promise<string | null> {
  try {
    await applyIssue(deps, repo, issue);
    return null;
  } catch (error) {
    if (!(error instanceof GithubUnavailableError) || error instanceof IssueGoneError) throw error;
    return error.message;
  }
}
