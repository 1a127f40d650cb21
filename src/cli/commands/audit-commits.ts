/**
 * `baton audit commits <repo-dir> [<rev-range>]`: checks the Baton trailers of each commit against
 * the ledger and lists the commits with none and those whose stamp cannot be true (an epoch
 * already fenced off, another session's claim, another host). Exits 1 when any is impossible.
 */
import type { Command } from 'commander';
import type { CommitCheck } from '../../coordinator/commit-audit.js';
import { validateDuration } from '../../core/validate.js';
import { Exit } from '../exit-codes.js';
import { withCoordinator } from '../run.js';

interface CommitsOptions {
  readonly slack?: string;
  readonly all?: boolean;
}

/** A duration (`5s`, `2m`; a bare number is seconds) from 0 to a day. */
function slackMs(raw: string | undefined): number {
  return raw === undefined ? 5_000 : validateDuration('--slack', raw, 0, 86_400_000);
}

function line(check: CommitCheck): string {
  const why = check.reasons.length === 0 ? '' : `: ${check.reasons.join('; ')}`;
  const label = check.status === 'none' ? 'no trailers' : check.status;
  return `${check.commit.slice(0, 12)}  ${label}  ${check.subject}${why}`;
}

export function registerAuditCommits(audit: Command): void {
  audit
    .command('commits')
    .description("check commits' Baton-* trailers against the ledger; list those without or impossible")
    .argument('<repo-dir>', 'a git checkout')
    .argument('[rev-range]', 'what to check, as for git log (default HEAD)')
    .option('--slack <duration>', "clock slack around a claim's grant and release (default 5)")
    .option('--all', 'list every commit, also those whose trailers check out')
    .action((dir: string, range: string | undefined, options: CommitsOptions, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const checks = await baton.ledger.commits({ dir, range, slackMs: slackMs(options.slack) });
        const count = (status: CommitCheck['status']): number =>
          checks.filter((check) => check.status === status).length;
        const listed = options.all === true ? checks : checks.filter((check) => check.status !== 'ok');
        const summary = {
          checked: checks.length,
          ok: count('ok'),
          none: count('none'),
          impossible: count('impossible'),
        };
        out.result({ ...summary, commits: listed }, () => [
          `${summary.checked} commits: ${summary.ok} stamped and possible, ${summary.none} without trailers, ` +
            `${summary.impossible} impossible`,
          ...listed.map(line),
        ]);
        if (summary.impossible > 0) throw new Exit(1);
      }),
    );
}
