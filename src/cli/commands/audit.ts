/** `baton audit`: the append-only ledger, oldest first. */
import type { Command } from 'commander';
import type { AuditEntry } from '../../core/audit-event.js';
import { iso } from '../output.js';
import { withApi } from '../run.js';
import { registerAuditCommits } from './audit-commits.js';
import { registerAuditLedger } from './audit-ledger.js';

interface AuditOptions {
  readonly task?: string;
  readonly session?: string;
  readonly job?: string;
  readonly type?: string;
  readonly after?: string;
  readonly limit?: string;
}

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description('print the audit ledger, oldest first; page on with --after <last id>')
    .option('--task <key>', 'only entries about this task')
    .option('--session <id>', 'only entries written by this session')
    .option('--job <id>', 'only entries about this job')
    .option('--type <type>', 'only entries of this type, such as claim:granted')
    .option('--after <id>', 'only entries with a larger id')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .action((options: AuditOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        // A task no one ever added is a typo, not an empty history: the coordinator refuses it (exit 4).
        const entries = await baton.audit({ ...options, key: options.task });
        out.result(entries, () => (entries.length === 0 ? ['no entries'] : entries.map(auditLine)));
      }),
    );
  registerAuditLedger(audit);
  registerAuditCommits(audit);
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
