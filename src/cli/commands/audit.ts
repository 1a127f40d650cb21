/** `baton audit`: the append-only ledger, oldest first; `--follow`: new rows as they are written. */
import type { Command } from 'commander';
import type { AuditEntry } from '../../core/audit-event.js';
import { InvalidInputError } from '../../core/errors.js';
import { parseAuditFollow, type AuditFollowPage } from '../../coordinator/audit-follow.js';
import { LIST_LIMIT_MAX } from '../../coordinator/inputs.js';
import { shellWord } from '../../core/text.js';
import { commandDone } from '../exit-open.js';
import { iso, jsonText, terminalText, type Output } from '../output.js';
import type { CliApi } from '../remote-api.js';
import { targetFlags, withApi } from '../run.js';
import { checkArgvSecrets } from '../argv-secrets.js';
import { writeOut } from '../stdio.js';
import { registerAuditCommits } from './audit-commits.js';
import { registerAuditLedger } from './audit-ledger.js';

interface AuditOptions {
  readonly task?: string;
  readonly session?: string;
  readonly job?: string;
  readonly type?: string;
  readonly after?: string;
  readonly limit?: string;
  readonly byToken?: string;
  readonly follow?: boolean;
}

/** How long one follow call waits for a row before asking again (the HTTP API's most). */
const FOLLOW_TURN = '20s';

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description('print the audit ledger, oldest first; page on with --after <last id>')
    .option('--task <key>', 'only entries about this task')
    .option('--session <id>', 'only entries written by this session')
    .option('--job <id>', 'only entries about this job')
    .option('--type <type>', 'only entries of this type, such as claim:granted')
    .option('--after <id>', 'only entries with a larger id (with --follow: 0 prints the whole ledger first)')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .option(
      '--by-token <id>',
      'only entries written with this API token (its id in `baton token list --all`)',
    )
    .option('--follow', 'keep printing new entries as they are written, in id order, until Ctrl-C')
    .action((options: AuditOptions, cmd: Command) => {
      if (options.follow === true) checkFollow(options);
      if (options.follow === true) checkArgvSecrets('audit --follow', cmd.optsWithGlobals(), false);
      return withApi(cmd, async (baton, out) => {
        if (options.follow === true) return follow(baton, out, options);
        // A task no one ever added is a typo, not an empty history: the coordinator refuses it (exit 4).
        const entries = await baton.audit({ ...options, key: options.task, token: options.byToken });
        out.result(entries, () =>
          entries.length === 0
            ? ['no entries']
            : [...entries.map(auditLine), ...nextPageLine(entries, options, targetFlags(cmd))],
        );
      });
    });
  registerAuditLedger(audit);
  registerAuditCommits(audit);
  // Commander takes the list's filters on every subcommand too: refused there, not silently ignored.
  audit.hook('preAction', (self, action) => refuseListFilters(self, action));
}

/** The list's filters a subcommand reads as its own (`export` reads them through optsWithGlobals). */
const FILTERS_USED: Readonly<Record<string, readonly string[]>> = { export: ['task', 'session'] };

/** Bad usage, refused before anything is opened (exit 2): a filter of the list given to a subcommand. */
function refuseListFilters(audit: Command, action: Command): void {
  if (action === audit) return;
  const used = FILTERS_USED[action.name()] ?? [];
  for (const option of audit.options) {
    const name = option.attributeName();
    if (used.includes(name) || audit.getOptionValueSource(name) !== 'cli') continue;
    throw new InvalidInputError(
      `${option.long ?? option.flags} belongs to \`baton audit\` (the list), not \`baton audit ${action.name()}\``,
      `leave it out; \`baton audit ${action.name()} --help\` lists what it takes`,
    );
  }
}

/** Bad input for --follow, refused before anything is opened (exit 2). */
function checkFollow(options: AuditOptions): void {
  if (options.byToken !== undefined) {
    throw new InvalidInputError(
      '--by-token and --follow do not go together: a follower prints the rows of every token',
      'leave out --follow to list the rows the token wrote; `baton token revoke <id>` stops it writing more',
    );
  }
  if (options.limit !== undefined) {
    throw new InvalidInputError(
      '--limit and --follow do not go together: --follow prints every new entry until stopped',
      'leave out --limit, or leave out --follow and page with --after <last id>',
    );
  }
  parseAuditFollow(followInput(options, undefined));
}

const followInput = (options: AuditOptions, after: string | number | undefined) => ({
  key: options.task,
  session: options.session,
  job: options.job,
  type: options.type,
  after,
});

/**
 * Prints settled entries as they come, one line each (--json: one JSON object a line, the shape
 * `baton audit --json` gives each entry), until SIGINT or SIGTERM; then exits 0 at once, without
 * waiting for an answer in flight.
 */
async function follow(baton: CliApi, out: Output, options: AuditOptions): Promise<void> {
  const stop = new AbortController();
  const leave = (): void => stop.abort();
  process.once('SIGINT', leave);
  process.once('SIGTERM', leave);
  const stopped = new Promise<null>((resolve) =>
    stop.signal.addEventListener('abort', () => resolve(null), { once: true }),
  );
  try {
    let after: string | number | undefined = options.after;
    while (!stop.signal.aborted) {
      const call = baton.auditFollow({ ...followInput(options, after), wait: FOLLOW_TURN }, stop.signal);
      const page: AuditFollowPage | null = await Promise.race([call, stopped]);
      if (page === null) {
        call.catch(() => undefined);
        break;
      }
      const lines = page.entries.map((entry) =>
        out.json ? jsonText(entry) : terminalText(auditLine(entry)),
      );
      if (lines.length > 0) writeOut(`${lines.join('\n')}\n`);
      after = page.through;
    }
  } finally {
    process.removeListener('SIGINT', leave);
    process.removeListener('SIGTERM', leave);
  }
  // An answer still in flight over HTTP is not waited for: the process ends now (exit-open.ts).
  commandDone();
}

/**
 * When the page is full, the exact command for the next one: the same store or API and filters, `--after` its last
 * id. Without it a reader of the newest rows saw the oldest 1000 and nothing saying there were more.
 */
function nextPageLine(entries: readonly AuditEntry[], options: AuditOptions, target: string[]): string[] {
  const last = entries.at(-1);
  if (last === undefined || entries.length < Number(options.limit ?? LIST_LIMIT_MAX)) return [];
  const flags = (['task', 'session', 'job', 'type', 'limit', 'byToken'] as const).flatMap((name) => {
    const value = options[name];
    return value === undefined ? [] : [`--${name === 'byToken' ? 'by-token' : name} ${shellWord(value)}`];
  });
  const command = ['baton', ...target, 'audit', ...flags, `--after ${last.id}`].join(' ');
  return [`stopped at the limit, ${entries.length} entries; the next page: ${command}`];
}

function auditLine(entry: AuditEntry): string {
  const parts = [
    `#${entry.id}`,
    iso(entry.at),
    entry.type,
    entry.key ?? '',
    entry.jobId === null ? '' : `job ${entry.jobId}`,
    entry.session === null ? '' : `session ${entry.session}${entry.host === null ? '' : `@${entry.host}`}`,
    entry.epoch === null ? '' : `epoch ${entry.epoch}`,
    Object.keys(entry.detail).length === 0 ? '' : JSON.stringify(entry.detail),
  ];
  return parts.filter((part) => part !== '').join('  ');
}
