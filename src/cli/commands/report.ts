/**
 * `baton report sessions` (docs/architecture.md#session-report), per session: kind, host, pid (an
 * agent's own, once spawned), when it started and ended and how (stopped, died, rescued, fenced),
 * the issues it worked (key, epoch, how its run or claim ended), its jobs and attempts, how long it
 * held claims, and its escalations. The same rows as the `session_report` view, for SQL users.
 */
import type { Command } from 'commander';
import { describeEnd, describePid, describeWorked, type SessionReport } from '../../core/session-report.js';
import { cell, iso, refuseTwoFormats, table } from '../output.js';
import { withApi, type GlobalOptions } from '../run.js';
import { parseWhen } from '../when.js';

interface SessionsOptions {
  readonly since?: string;
  readonly until?: string;
  readonly host?: string;
  readonly csv?: boolean;
}

const CSV_COLUMNS = [
  'session',
  'kind',
  'host',
  'pid',
  'name',
  'startedAt',
  'endedAt',
  'end',
  'issuesWorked',
  'jobs',
  'attempts',
  'heldMs',
  'escalations',
  'endReason',
  'agentPid',
  'endedBy',
];

const worked = (report: SessionReport): string =>
  report.issuesWorked.map((issue) => `${issue.key}@${issue.epoch}:${describeWorked(issue)}`).join(' ');

function csvCell(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function csv(rows: readonly SessionReport[]): string {
  const lines = rows.map((report) =>
    [
      String(report.session),
      report.kind,
      report.host,
      String(report.pid),
      report.name ?? '',
      iso(report.startedAt),
      report.endedAt === null ? '' : iso(report.endedAt),
      report.end,
      worked(report),
      String(report.jobs),
      String(report.attempts),
      String(report.heldMs),
      String(report.escalations),
      report.endReason ?? '',
      report.agentPid === null ? '' : String(report.agentPid),
      report.endedBy ?? '',
    ]
      .map(csvCell)
      .join(','),
  );
  return [CSV_COLUMNS.join(','), ...lines].join('\n');
}

export function registerReport(program: Command): void {
  const reportCommand = program.command('report').description('reports over the ledger');
  reportCommand
    .command('sessions')
    .description('per session: host, pid, start, end and how, issues worked, jobs, time held, escalations')
    .option('--since <date>', 'sessions live at or after this time (ISO, or 30d ago)')
    .option('--until <date>', 'sessions started before this time')
    .option('--host <name>', "only this host's sessions")
    .option('--csv', 'print CSV (not with --json)')
    .action((options: SessionsOptions, cmd: Command) => {
      if (options.csv === true && cmd.optsWithGlobals<GlobalOptions>().json === true) {
        refuseTwoFormats(['--json', '--csv'], 'leave one out: --json prints JSON, --csv prints CSV');
      }
      return withApi(cmd, async (baton, out) => {
        const rows = await baton.ledger.sessions({
          ...(options.since === undefined ? {} : { since: parseWhen('--since', options.since) ?? 0 }),
          ...(options.until === undefined ? {} : { until: parseWhen('--until', options.until) ?? 0 }),
          ...(options.host === undefined ? {} : { host: options.host }),
        });
        if (options.csv === true) {
          process.stdout.write(`${csv(rows)}\n`);
          return;
        }
        out.result(rows, () =>
          rows.length === 0
            ? 'no sessions'
            : table(
                [
                  'session',
                  'kind',
                  'host',
                  'pid',
                  'started',
                  'ended',
                  'end',
                  'jobs',
                  'held s',
                  'issues worked',
                ],
                rows.map((report) => [
                  String(report.session),
                  report.kind,
                  report.host,
                  describePid(report),
                  iso(report.startedAt),
                  report.endedAt === null ? '-' : iso(report.endedAt),
                  describeEnd(report),
                  `${report.jobs}/${report.attempts}`,
                  (report.heldMs / 1000).toFixed(0),
                  cell(worked(report)),
                ]),
              ),
        );
      });
    });
}
