/**
 * `baton db backup FILE`: an online backup of the SQLite database while `baton up` writes
 * (docs/decisions/0050-an-online-sqlite-backup.md). The copy is written 0600 under a temporary
 * name beside FILE, checked (PRAGMA quick_check, then the ledger as `baton audit verify` checks
 * it, both on the copy opened read-only), and only then renamed to FILE, so FILE is whole and
 * checked or absent. Refused, changing nothing: a PostgreSQL database (pg_dump), an existing
 * FILE without --force, a directory this user may not write. A copy whose ledger is not intact
 * is named only with --keep-damaged-ledger (the evidence, kept as it is, before a repair).
 */
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { ConflictError, InvalidInputError } from '../../core/errors.js';
import { Coordinator } from '../../coordinator/coordinator.js';
import type { VerifyReport } from '../../coordinator/ledger/verify.js';
import { backupSqlite, quickCheckSqlite, sqliteSource } from '../../store/backup.js';
import { openStore } from '../../store/open.js';
import { Exit } from '../exit-codes.js';
import { Output, writeErrorLine } from '../output.js';
import { dbUrl, refuseRemote, type GlobalOptions } from '../run.js';
import { rowsText } from '../../core/text.js';

interface BackupOptions {
  readonly force?: boolean;
  readonly keepDamagedLedger?: boolean;
}

/** What a backup wrote and found, as `--json` prints it. */
interface BackupReport {
  readonly database: string;
  readonly file: string;
  readonly bytes: number;
  readonly schemaVersion: number;
  readonly quickCheck: 'ok';
  readonly ledgerRows: number;
  readonly checkpoints: number;
  /** False only with --keep-damaged-ledger: the copy's ledger has `ledgerProblems` problems. */
  readonly ledgerIntact: boolean;
  readonly ledgerProblems: number;
}

export function registerDbBackup(db: Command): void {
  db.command('backup <file>')
    .description(
      'SQLite: copy the database online (while baton up writes) into FILE, 0600, checked before it is named; ' +
        'PostgreSQL: use pg_dump',
    )
    .option('--force', 'replace FILE if it exists')
    .option(
      '--keep-damaged-ledger',
      "name FILE even when the copy's ledger is not intact (quick_check must still pass), to keep the evidence",
    )
    .action((file: string, options: BackupOptions, cmd: Command) => backup(file, options, cmd));
}

async function backup(file: string, options: BackupOptions, cmd: Command): Promise<void> {
  refuseRemote(cmd);
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const url = dbUrl(globals);
  const source = resolve(sqliteSource(url));
  const target = resolve(file);
  refuseTarget(source, target, options.force === true);
  const temporary = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  createPrivate(temporary);
  let report: BackupReport;
  try {
    // The database as every command but `baton up` and `baton init` takes it: Baton's, at this schema.
    await (await openStore(url, { intent: 'use', scan: true })).close();
    await backupSqlite(source, temporary);
    report = await checkCopy(temporary, source, target, options.keepDamagedLedger === true);
    renameSync(temporary, target);
  } finally {
    rmSync(temporary, { force: true });
  }
  const megabytes = (report.bytes / 1_048_576).toFixed(1);
  new Output(globals.json === true).result(
    report,
    () =>
      `backed up ${source} to ${target}: ${megabytes} MB, ledger ${rowsText(report.ledgerRows)} ` +
      ledgerWords(report, target) +
      `, schema version ${report.schemaVersion}, quick_check ok`,
  );
}

/**
 * The copy's ledger in words. No checkpoint: nothing was verified, so not "intact" (`baton audit
 * verify` says the same and how to start sealing).
 */
function ledgerWords(report: BackupReport, target: string): string {
  if (!report.ledgerIntact)
    return (
      `NOT intact, ${report.ledgerProblems} problem(s) (\`baton --db ${target} audit verify\` lists them) ` +
      `(${report.checkpoints} checkpoint(s))`
    );
  if (report.checkpoints === 0)
    return 'not sealed (no checkpoint, so nothing was verified; `baton audit verify` says how to seal it)';
  return `intact (${report.checkpoints} checkpoint(s))`;
}

/** FILE must not be the database, nor a directory, nor exist unless --force. */
function refuseTarget(source: string, target: string, force: boolean): void {
  if (target === source)
    throw new InvalidInputError(`${target} is the database itself`, 'name a new file for the backup');
  if (!existsSync(target)) return;
  if (statSync(target).isDirectory())
    throw new InvalidInputError(`${target} is a directory`, 'name a file in it, e.g. baton-backup.db');
  if (!force)
    throw new ConflictError(
      `${target} exists; nothing was written`,
      'name a new file, or pass --force to replace it',
    );
}

/**
 * The temporary copy, empty and 0600 before a byte is written (it will hold token hashes, commands
 * and the ledger); its directory refusing a new file is the command's refusal, nothing written.
 */
function createPrivate(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new InvalidInputError(
      `cannot write a backup in ${dirname(path)} (${why}); nothing was written`,
      'choose a directory this user may write, or make it first (umask 077; mkdir -p DIR)',
    );
  }
}

/**
 * The copy, opened read-only: PRAGMA quick_check, its schema version, and its ledger verified as
 * `baton audit verify` verifies the database's (the keys it holds). A copy that fails either is
 * removed, and the command exits 1 as `audit verify` does, saying so on stderr; with `keepDamaged`,
 * one whose ledger alone fails is kept, and the report says so.
 */
async function checkCopy(
  copy: string,
  source: string,
  target: string,
  keepDamaged: boolean,
): Promise<BackupReport> {
  const problems = await quickCheckSqlite(copy);
  if (problems.length !== 1 || problems[0] !== 'ok') {
    const found = problems.slice(0, 3).join('; ');
    return fail(`the copy of ${source} failed PRAGMA quick_check (${found}); ${target} was not written`);
  }
  const store = await openStore(copy, { intent: 'use', readOnly: true, scan: true });
  let schemaVersion: number;
  let ledger: VerifyReport;
  try {
    schemaVersion = (await store.schema()).applied;
    ledger = await new Coordinator(store).ledger.verify({});
  } finally {
    await store.close();
  }
  if (!ledger.ok && !keepDamaged)
    return fail(
      `the copy's ledger is NOT intact (${ledger.problemCount} problem(s)); ${target} was not written: ` +
        `run \`baton audit verify\` on ${source} to see them, or pass --keep-damaged-ledger to keep the copy as it is`,
    );
  const bytes = statSync(copy).size;
  return {
    database: source,
    file: target,
    bytes,
    schemaVersion,
    quickCheck: 'ok',
    ledgerRows: ledger.rows,
    checkpoints: ledger.seals,
    ledgerIntact: ledger.ok,
    ledgerProblems: ledger.problemCount,
  };
}

function fail(line: string): never {
  writeErrorLine(line, undefined);
  throw new Exit(1);
}
