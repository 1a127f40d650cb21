/**
 * `baton doctor`'s `github-outbox` check (docs/decisions/0013-github-backlog.md, "Keys no sync
 * applies"): a `github:` task added by hand writes outbox rows whether or not a sync is set up for
 * its repository. They are kept, so that a sync set up later tells GitHub (labels from each task's
 * state then, comments in order); until then nothing applies them, which this check says. Pure.
 */
import type { UnsyncedOutbox } from './github.js';
import type { Instant } from './time.js';
import { check, type DoctorCheck } from './doctor.js';

/** Repositories named in the check's line at most; the count says how many more. */
const NAMED = 3;

const days = (ms: number): string => `${Math.max(0, Math.floor(ms / 86_400_000))} d`;

export function judgeOutbox(unsynced: readonly UnsyncedOutbox[], now: Instant): DoctorCheck {
  if (unsynced.length === 0)
    return check('github-outbox', 'ok', 'no GitHub outbox row waits for a repository without a sync');
  const rows = unsynced.reduce((sum, one) => sum + one.rows, 0);
  const each = unsynced
    .slice(0, NAMED)
    .map((one) => `${one.repo} (${one.rows}, oldest ${days(now - one.oldestAt)})`);
  const more = unsynced.length > NAMED ? ` and ${unsynced.length - NAMED} more` : '';
  const first = unsynced[0]?.repo ?? 'owner/repo';
  return check(
    'github-outbox',
    'warn',
    `${rows} GitHub outbox row(s) of github: tasks wait for repositories no sync has run for, so ` +
      `nothing tells GitHub: ${each.join(', ')}${more}`,
    `\`baton up --github ${first}\` (or \`baton github sync ${first} --project\`) applies them: ` +
      'labels from each task as it is then, comments in order. They are kept until then; keys of ' +
      'work GitHub should not hear of need no `github:` prefix. A repository spelled with capitals ' +
      'is a task migration 0050 left as one of two spellings of one issue: settle the pair ' +
      '(docs/decisions/0013-github-backlog.md, "one issue, one key")',
  );
}
