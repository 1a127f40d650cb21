/**
 * `baton db copy --to postgres://…`: moves a quiescent SQLite backlog (--db) into an empty PostgreSQL
 * database, every table its meaning needs, in one transaction (docs/decisions/0049). It refuses, with
 * nothing changed, while work is in flight, while the source's ledger does not verify or has rows no
 * checkpoint covers, and when the target holds rows. The new ledger carries the old one's rows and
 * ends them with a `ledger:continued` row naming the old ledger's last checkpoint; the SQLite file and
 * its export stay the old ledger's evidence.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { InvalidInputError } from '../../core/errors.js';
import { redactSecrets, withoutPassword } from '../../core/redact.js';
import type { VerifyReport } from '../../coordinator/ledger/verify.js';
import { COPIED_TABLES, TABLES_LEFT } from '../../store/copy-plan.js';
import {
  copyIntoPostgres,
  openCopySource,
  readTargetState,
  type CopySource,
  type LastCheckpoint,
  type QuiescenceFacts,
  type TargetState,
} from '../../store/db-copy.js';
import { parseDbUrl } from '../../store/open.js';
import { migrateDatabase } from '../../store/roles.js';
import type { Output } from '../output.js';
import { Refusal } from '../refusal.js';
import { dbUrl, refuseRemote, withCoordinator, type GlobalOptions } from '../run.js';
import { cliActor } from './lifecycle.js';

interface CopyOptions {
  readonly to?: string;
  readonly dryRun?: boolean;
}

export function registerDbCopy(db: Command): void {
  db.command('copy')
    .description(
      'copy a quiescent SQLite backlog (--db) into an empty PostgreSQL database, in one transaction: ' +
        'tasks, states, gates, dependencies, jobs and their history, the ledger (continued by a ' +
        'ledger:continued row), then marks the file moved (commands that write it refuse it); exit 2 bad ' +
        'flags, 3 refused (work in flight, the file being written or already moved, ledger not verified ' +
        'or not sealed, target not empty), 4 target database missing, 5 database unreachable or login ' +
        'refused, 6 the role may not create tables in the target schema; nothing changed',
    )
    .option('--to <url>', 'the PostgreSQL database (postgres://…): empty, or with Baton tables and no rows')
    .option('--dry-run', 'check everything and print the rows each table would copy; change nothing')
    .action((options: CopyOptions, cmd: Command) => copy(options, cmd));
}

async function copy(options: CopyOptions, cmd: Command): Promise<void> {
  refuseRemote(cmd);
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const from = parseDbUrl(dbUrl(globals));
  if (from.engine !== 'sqlite') {
    throw new InvalidInputError(
      '--db must name the SQLite file to copy from (the copy goes from SQLite to PostgreSQL)',
      'pass --db .baton/baton.db (or the file BATON_DB names) and --to postgres://…',
    );
  }
  const to = options.to ?? '';
  if (to === '' || parseDbUrl(to).engine !== 'postgres') {
    throw new InvalidInputError(
      `--to must be a PostgreSQL URL${to === '' ? '' : `, not ${JSON.stringify(redactSecrets(to))}`}`,
      'pass --to postgres://user:password@host:5432/database (an empty database)',
    );
  }
  await withCoordinator(
    cmd,
    async (baton, out) => {
      // The write lock first: the verify below and every check read what the copy then takes.
      const source = await openCopySource(from.path);
      try {
        const report = await baton.ledger.verify();
        await copyChecked(
          { path: resolve(from.path), to, source, report, dryRun: options.dryRun === true },
          out,
        );
      } finally {
        source.close();
      }
    },
    { scan: true },
  );
}

interface CopyRun {
  readonly path: string;
  readonly to: string;
  readonly source: CopySource;
  readonly report: VerifyReport;
  readonly dryRun: boolean;
}

async function copyChecked(run: CopyRun, out: Output): Promise<void> {
  const { path, to, source, report } = run;
  refuseBusy(source.quiescence(), path);
  const checkpoint = source.lastCheckpoint();
  refuseLedger(report, checkpoint, path);
  const target = await readTargetState(to);
  refuseTarget(target, redactSecrets(to));
  refusePrivilege(target, redactSecrets(to));
  const counts = Object.fromEntries(COPIED_TABLES.map(({ table }) => [table, source.count(table)]));
  const where = redactSecrets(to);
  if (run.dryRun) {
    const result = {
      dryRun: true,
      from: path,
      to: where,
      tables: counts,
      notCopied: TABLES_LEFT,
      checkpoint: shownCheckpoint(checkpoint),
    };
    out.result(result, () => [
      `dry run: would copy ${path} into ${where}${target.batonTables ? '' : ' (after creating its tables)'}:`,
      ...tableLines(counts),
      ...leftLines(),
      'nothing changed',
    ]);
    return;
  }
  await migrateDatabase(to, 'migrate');
  const link = linkDetail(path, checkpoint, report, counts);
  const copied = await copyIntoPostgres(to, source, link).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`the copy failed and was rolled back, the target holds no rows of it: ${message}`);
  });
  const moved = `moved to ${where} at ${new Date().toISOString()}`;
  source.markMoved(moved);
  const evidence = evidenceCommands(path);
  out.result(
    { from: path, to: where, ...copied, moved, notCopied: TABLES_LEFT, continues: link, evidence },
    () => [
      `copied ${path} into ${where} in one transaction:`,
      ...tableLines(copied.tables),
      ...leftLines(),
      checkpoint === null
        ? `ledger: row #${copied.linkId} ledger:continued (the old ledger had no rows)`
        : `ledger: row #${copied.linkId} ledger:continued names the old ledger's checkpoint ${checkpoint.seq} ` +
          `(hash ${checkpoint.hash}, rows through #${checkpoint.lastId}, key ${checkpoint.keyId})`,
      `${path} is marked "${moved}": baton up, baton serve and every command that writes refuse it now`,
      'keep the old ledger as evidence (the file too), and check it whenever asked:',
      ...evidence.map((line) => `  ${line}`),
      'the link names the old checkpoint but does not prove the copied rows; to audit the move (before or after ' +
        `the first seal): baton audit verify --db ${where} --previous old-ledger.jsonl`,
      'an anchor file of the old ledger (`--ledger-anchor`, `--anchor`) names its checkpoints: keep it with ' +
        'that evidence and give the new database a new one (a sealer refuses a file whose newest line the new ' +
        'ledger does not hold)',
      // docs/operations.md: the password in PGPASSWORD or ~/.pgpass, never in the URL.
      `then split the roles (docs/security.md): baton --db ${withoutPassword(to)} db roles --owner <owner> ` +
        '--runtime <runtime role>, and run everything else under the runtime role: ' +
        `BATON_DB=${runtimeUrl(to)}, its password in PGPASSWORD or ~/.pgpass, never in the URL ` +
        '(baton up seals its ledger with the same key file)',
    ],
  );
}

function tableLines(counts: Readonly<Record<string, number>>): string[] {
  return Object.entries(counts).map(([table, rows]) => `  ${table.padEnd(14)} ${rows}`);
}

function leftLines(): string[] {
  return [
    'not copied:',
    ...Object.entries(TABLES_LEFT).map(([table, why]) => `  ${table.padEnd(18)} ${why}`),
  ];
}

function evidenceCommands(path: string): string[] {
  return [
    `baton audit export --db ${path} --format jsonl > old-ledger.jsonl`,
    'baton audit verify --file old-ledger.jsonl',
  ];
}

/** The checkpoint as the link row and --json show it: its time in ISO 8601, as every time Baton prints. */
function shownCheckpoint(checkpoint: LastCheckpoint | null): Record<string, unknown> | null {
  return checkpoint === null
    ? null
    : { ...checkpoint, sealedAt: new Date(checkpoint.sealedAt).toISOString() };
}

function linkDetail(
  path: string,
  checkpoint: LastCheckpoint | null,
  report: VerifyReport,
  counts: Readonly<Record<string, number>>,
): Record<string, unknown> {
  return {
    from: { engine: 'sqlite', database: path },
    checkpoint: shownCheckpoint(checkpoint),
    ledger: { rows: report.rows, seals: report.seals, sealedThrough: report.sealedThrough },
    tables: counts,
    by: cliActor().name,
  };
}

function refuseBusy(facts: QuiescenceFacts, path: string): void {
  const busy = [
    ...facts.liveSessions.map((live) => `session ${live.id} (${live.kind} on ${live.host}) is live`),
    ...facts.activeJobs.map((id) => `job ${id} is claimed or running`),
    ...facts.heldTasks.map((key) => `${key} is claimed`),
    ...facts.heldWorkspaces.map((name) => `workspace ${name} is locked`),
  ];
  if (busy.length === 0) return;
  throw new Refusal(
    'conflict',
    'not_quiescent',
    `${path} is in use, the copy wants a quiescent backlog: ${busy.slice(0, 5).join('; ')}` +
      (busy.length > 5 ? ` (and ${busy.length - 5} more)` : ''),
    'stop every `baton up` (it drains its runs), let pull workers finish (`baton job finish`), ' +
      'end the rest with `baton session end <id>` (`baton session list` shows them), then copy again',
    { busy },
  );
}

function refuseLedger(report: VerifyReport, checkpoint: LastCheckpoint | null, path: string): void {
  if (!report.ok) {
    const bad = report.firstBad;
    throw new Refusal(
      'conflict',
      'ledger_not_intact',
      `the ledger of ${path} does not verify (${report.problemCount} problems; first: row ${bad?.id} ` +
        `${bad?.problem}): a copy would carry a damaged ledger on as if it were whole`,
      `see \`baton audit verify --db ${path}\`; keep the file as evidence and investigate before moving`,
    );
  }
  if (report.unsealed.count === 0) return;
  throw new Refusal(
    'conflict',
    'ledger_not_sealed',
    `${report.unsealed.count} ledger rows of ${path} are not sealed (from #${report.unsealed.firstId}): ` +
      'the new ledger can only name a checkpoint that covers every old row',
    checkpoint === null
      ? `run \`baton ledger init --db ${path}\` and \`baton audit seal --db ${path}\`, then copy again`
      : `run \`baton audit seal --db ${path}\` (with the ledger key), then copy again`,
  );
}

function refuseTarget(target: TargetState, where: string): void {
  const held = Object.entries(target.nonEmpty).map(([table, rows]) => `${table} ${rows}`);
  if (held.length === 0 && target.otherTables.length === 0) return;
  throw new Refusal(
    'conflict',
    'target_not_empty',
    held.length > 0
      ? `${where} is not empty (rows: ${held.slice(0, 6).join(', ')}): the copy fills an empty database only`
      : `${where} holds tables that are not Baton's (${target.otherTables.slice(0, 6).join(', ')})`,
    'create an empty database (CREATE DATABASE baton) and pass it with --to',
  );
}

/** The target's URL for the runtime role, without a password: `postgres://<runtime role>@host/db`. */
function runtimeUrl(to: string): string {
  const url = new URL(withoutPassword(to));
  url.username = 'RUNTIME_ROLE';
  return url.toString().replace('RUNTIME_ROLE', '<runtime role>');
}

/** A role that may not create the tables (PostgreSQL 15: public is its owner's), refused before anything. */
function refusePrivilege(target: TargetState, where: string): void {
  if (target.batonTables || target.canCreate) return;
  throw new Refusal(
    'forbidden',
    'schema_privilege',
    `${where}: role ${target.role} may not create tables in schema ${target.schema} (PostgreSQL 15 and ` +
      'later give CREATE on public to its owner only), so the copy cannot make its tables',
    `as a superuser or the database's owner: ALTER SCHEMA ${target.schema} OWNER TO ${target.role} ` +
      `(or GRANT CREATE ON SCHEMA ${target.schema} TO ${target.role}), then copy again`,
  );
}
