/**
 * `baton report sessions` (docs/architecture.md#session-report), per session: kind, host, pid, when
 * it started and ended and how (ended, rescued, fenced), the issues it worked (key, epoch,
 * outcome), its jobs and attempts, how long it held claims, and its escalations. The same rows as
 * the `session_report` view, for people who use SQL.
 */
import type { Command } from 'commander';
import type { SessionReport } from '../../core/session-report.js';
import { cell, iso, table } from '../output.js';
import { withApi } from '../run.js';
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
];

const worked = (r: SessionReport): string =>
  r.issuesWorked.map((w) => `${w.key}@${w.epoch}:${w.outcome ?? 'held'}`).join(' ');

function csvCell(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function csv(rows: readonly SessionReport[]): string {
  const lines = rows.map((r) =>
    [
      String(r.session),
      r.kind,
      r.host,
      String(r.pid),
      r.name ?? '',
      iso(r.startedAt),
      r.endedAt === null ? '' : iso(r.endedAt),
      r.end,
      worked(r),
      String(r.jobs),
      String(r.attempts),
      String(r.heldMs),
      String(r.escalations),
    ]
      .map(csvCell)
      .join(','),
  );
  return [CSV_COLUMNS.join(','), ...lines].join('\n');
}

export function registerReport(program: Command): void {
  const report = program.command('report').description('reports over the ledger');
  report
    .command('sessions')
    .description('per session: host, pid, start, end and how, issues worked, jobs, time held, escalations')
    .option('--since <date>', 'sessions live at or after this time (ISO, or 30d ago)')
    .option('--until <date>', 'sessions started before this time')
    .option('--host <name>', "only this host's sessions")
    .option('--csv', 'print CSV')
    .action((o: SessionsOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const rows = await baton.ledger.sessions({
          ...(o.since === undefined ? {} : { since: parseWhen('--since', o.since) ?? 0 }),
          ...(o.until === undefined ? {} : { until: parseWhen('--until', o.until) ?? 0 }),
          ...(o.host === undefined ? {} : { host: o.host }),
        });
        if (o.csv === true && !out.json) {
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
                rows.map((r) => [
                  String(r.session),
                  r.kind,
                  r.host,
                  String(r.pid),
                  iso(r.startedAt),
                  r.endedAt === null ? '-' : iso(r.endedAt),
                  r.end,
                  `${r.jobs}/${r.attempts}`,
                  (r.heldMs / 1000).toFixed(0),
                  cell(worked(r)),
                ]),
              ),
        );
      }),
    );
}
