/**
 * `baton audit seal | verify | export | prune | anchor`: the ledger an auditor can check. seal signs
 * settled rows into checkpoints (the leader of `baton up` does it in the background); verify
 * recomputes everything and exits 1 naming the first bad row; export streams the ledger with what
 * verify needs offline; prune removes old checkpoints' rows behind a signed record; anchor copies
 * the newest checkpoint out of the database.
 */
import { createWriteStream, openSync } from 'node:fs';
import { once } from 'node:events';
import type { Command } from 'commander';
import { appendAnchors, anchorOf, checkAnchorFile, newestAnchored } from '../../coordinator/ledger/anchor.js';
import { csvLines, CSV_HEADER, jsonLines } from '../../coordinator/ledger/export-format.js';
import { keyFilePath, loadKeyFile, type LedgerSigner } from '../../coordinator/ledger/keys.js';
import type { KnownCheckpoint } from '../../coordinator/ledger/seal.js';
import { newestKnown, SealedRecord } from '../../coordinator/ledger/sealed-record.js';
import type { Checkpoint } from '../../core/ledger.js';
import type { LedgerEvent } from '../../coordinator/ledger/events.js';
import { ConflictError, InvalidInputError } from '../../core/errors.js';
import { fileErrorInWords } from '../../core/file-errors.js';
import { git, gitDirOf, gitFailureLine, gitMaybe, isGitFailure, requireCommitter } from '../../os/git.js';
import { refuseTwoFormats, writeErrorLine } from '../output.js';
import { progressBar } from '../progress.js';
import { collect, dbUrl, stateDir, withCoordinator, type GlobalOptions } from '../run.js';
import { parseWhen } from '../when.js';
import { verify, type VerifyOptions } from './audit-verify.js';
import { KEY_FILE_HELP } from './ledger.js';
import { rowsText } from '../../core/text.js';

interface KeyOptions {
  readonly keyFile?: string;
  readonly anchor?: string;
}

interface PruneOptions extends KeyOptions {
  readonly before: string;
}

interface AnchorOptions {
  readonly out?: string;
  readonly git?: string;
}

interface ExportOptions {
  readonly format: string;
  readonly json?: boolean;
  readonly out?: string;
  readonly since?: string;
  readonly until?: string;
  readonly task?: string;
  readonly session?: string;
  readonly host?: string;
  readonly kind?: string;
}

/**
 * The export writes about this much text at a time, well under the size V8 gives a string of its
 * own (large-object) space, so each chunk dies young instead of waiting for a full collection.
 */
const CHUNK_CHARS = 32_768;

const ANCHOR_HELP =
  'append an anchor line per new checkpoint to this file (keep it outside the database); ' +
  'its newest line must still match';

export function registerAuditLedger(audit: Command): void {
  audit
    .command('seal')
    .description('sign the settled, unsealed ledger rows into checkpoints now')
    .option('--key-file <path>', KEY_FILE_HELP)
    .option('--anchor <file>', ANCHOR_HELP)
    .action((options: KeyOptions, cmd: Command) => seal(options, cmd));
  audit
    .command('verify')
    .description('recompute every seal; exit 0 when intact, 1 naming the first bad row')
    .option('--file <export>', 'check an export (jsonl or csv) offline instead of the database')
    .option('--anchor <file>', 'anchors written by `seal --anchor`: trust their keys and checkpoints only')
    .option('--public-key <key>', 'trust only this key (ed25519:<base64>); repeatable', collect)
    .option(
      '--retired <key-id>',
      'a key you know was retired: fail unless the ledger still holds its ledger:key-retired row; repeatable',
      collect,
    )
    .option(
      '--partial',
      'with --file: check only the rows of a filtered export (rows it lacks are not missing)',
    )
    .option(
      '--previous <export>',
      'the export of the ledger `baton db copy` moved from: check it verifies and that its rows are the ones here',
    )
    .action((options: VerifyOptions, cmd: Command) => verify(options, cmd));
  audit
    .command('export')
    .description('stream the ledger, with its checkpoints, for `verify --file` (constant memory)')
    .requiredOption('--format <format>', 'jsonl or csv')
    .option('--out <file>', 'write to this file (default stdout)')
    .option('--since <date>', 'rows at or after this time (ISO, or 30d ago)')
    .option('--until <date>', 'rows before this time')
    .option('--task <key>', "only this task's rows")
    .option('--session <id>', "only this session's rows")
    .option('--host <name>', "only this host's rows")
    .option('--kind <type>', 'only rows of this type, such as claim:granted')
    // `baton audit` has --task, --session … of its own: commander files them there, so read both.
    .action((_: ExportOptions, cmd: Command) => exportLedger(cmd.optsWithGlobals<ExportOptions>(), cmd));
  audit
    .command('prune')
    .description('remove sealed rows older than a date, leaving a signed prune record')
    .requiredOption('--before <date>', 'an ISO date or time, or days ago such as 365d')
    .option('--key-file <path>', KEY_FILE_HELP)
    .option(
      '--anchor <file>',
      'append an anchor line per prune record to this file; its newest line must still match',
    )
    .action((options: PruneOptions, cmd: Command) => prune(options, cmd));
  audit
    .command('anchor')
    .description('print the newest checkpoint as an anchor line, to keep outside the database')
    .option('--out <file>', 'append it to this file')
    .option('--git <repo>', 'also add it as a git note (refs/notes/baton-ledger) on HEAD of this repository')
    .action((options: AnchorOptions, cmd: Command) => anchor(options, cmd));
}

/**
 * The signing key, its record of what it sealed last in this database (sealed-record.ts), and the
 * newest checkpoint known outside the database that must still be there: the anchor file's
 * newest line or the record's, whichever is newer.
 */
function keyAndKnown(
  options: KeyOptions,
  cmd: Command,
): { signer: LedgerSigner; record: SealedRecord; follows: KnownCheckpoint | undefined } {
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  const path = keyFilePath(options.keyFile, stateDir(globals));
  const signer = loadKeyFile(path);
  const record = SealedRecord.of(path, dbUrl(globals));
  const anchored = options.anchor === undefined ? null : newestAnchored(options.anchor);
  return { signer, record, follows: newestKnown(anchored, record.known()) ?? undefined };
}

/** Records the newest checkpoint written; one line on stderr when the record cannot be kept. */
function keepRecord(record: SealedRecord, last: Checkpoint | undefined, publicKey: string): void {
  if (last === undefined) return;
  try {
    record.keep(last, publicKey);
  } catch (error) {
    writeErrorLine(error instanceof Error ? error.message : String(error), undefined);
  }
}

function seal(options: KeyOptions, cmd: Command): Promise<void> {
  if (options.anchor !== undefined) checkAnchorFile(options.anchor, '--anchor');
  return withCoordinator(cmd, async (baton, out) => {
    const { signer, record, follows } = keyAndKnown(options, cmd);
    const { sealed, raced } = await baton.ledger.seal(signer, follows);
    if (options.anchor !== undefined)
      appendAnchors(
        options.anchor,
        sealed.map((checkpoint) => anchorOf(checkpoint, signer.publicKey)),
      );
    keepRecord(record, sealed.at(-1), signer.publicKey);
    const rows = sealed.reduce((sum, checkpoint) => sum + checkpoint.rowCount, 0);
    const last = sealed.at(-1);
    out.result(
      { checkpoints: sealed.length, rows, sealedThrough: last?.lastId ?? null, sealed, raced },
      () =>
        last === undefined
          ? 'nothing new to seal'
          : `sealed ${rowsText(rows)} in ${sealed.length} checkpoint(s), through row ${last.lastId} ` +
            `(checkpoint ${last.seq})`,
    );
  });
}

function prune(options: PruneOptions, cmd: Command): Promise<void> {
  if (options.anchor !== undefined) checkAnchorFile(options.anchor, '--anchor');
  return withCoordinator(cmd, async (baton, out) => {
    const before = parseWhen('--before', options.before) ?? 0;
    const { signer, record, follows } = keyAndKnown(options, cmd);
    const { records, removed } = await baton.ledger.prune(signer, before, follows);
    if (options.anchor !== undefined)
      appendAnchors(
        options.anchor,
        records.map((pruned) => anchorOf(pruned, signer.publicKey)),
      );
    keepRecord(record, records.at(-1), signer.publicKey);
    const last = records.at(-1);
    out.result({ removed, records }, () =>
      last === undefined
        ? `nothing to prune: no sealed checkpoint holds only rows before ${new Date(before).toISOString()}`
        : `pruned ${rowsText(removed)}, ids ${records[0]?.firstId ?? '?'}..${last.lastId} (prune record ${last.seq})`,
    );
  });
}

function anchor(options: AnchorOptions, cmd: Command): Promise<void> {
  return withCoordinator(cmd, async (baton, out) => {
    const newest = await baton.ledger.newestAnchor();
    if (newest === null) throw new InvalidInputError('nothing is sealed yet', 'run `baton audit seal` first');
    if (options.git !== undefined) await refuseNoteTarget(options.git);
    if (options.out !== undefined) appendAnchors(options.out, [newest]);
    if (options.git !== undefined) {
      const note = JSON.stringify(newest);
      await git(['notes', '--ref=baton-ledger', 'append', '-m', note, 'HEAD'], { cwd: options.git }).catch(
        (error: unknown) => {
          // Git's verdict, not the whole command: its -m argument is the anchor, a line of JSON.
          if (!isGitFailure(error)) throw error;
          throw new ConflictError(
            `git notes append on HEAD failed in ${options.git}: ${gitFailureLine(error)}`,
          );
        },
      );
    }
    out.result(newest, () => JSON.stringify(newest));
  });
}

/** What `--git` needs, checked before any anchor is written: a git checkout, a commit, a committer. */
async function refuseNoteTarget(dir: string): Promise<void> {
  await gitDirOf(dir, '--git repository');
  if ((await gitMaybe(['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd: dir })) === null) {
    throw new InvalidInputError(
      `the --git repository ${dir} has no commit yet`,
      'commit something first: the note goes on HEAD',
    );
  }
  await requireCommitter(dir);
}

async function exportLedger(options: ExportOptions, cmd: Command): Promise<void> {
  if (options.format !== 'jsonl' && options.format !== 'csv') {
    throw new InvalidInputError(`--format must be jsonl or csv, not ${JSON.stringify(options.format)}`);
  }
  const format = options.format;
  if (options.json === true) {
    refuseTwoFormats(
      ['--json', `--format ${format}`],
      'leave out --json: the export is in the format --format names',
    );
  }
  const filter = {
    task: options.task,
    session: options.session,
    host: options.host,
    kind: options.kind,
    since: parseWhen('--since', options.since),
    until: parseWhen('--until', options.until),
  };
  await withCoordinator(
    cmd,
    async (baton) => {
      const sink =
        options.out === undefined ? process.stdout : createWriteStream('', { fd: openOut(options.out) });
      const bar = progressBar('exporting', await baton.ledger.size());
      await writeExport(baton.ledger.events(filter), format, sink, (rows) => bar.tick(rows));
      bar.done();
      if (sink !== process.stdout) {
        sink.end();
        await once(sink, 'finish');
      }
    },
    { scan: true },
  );
}

/** The export's --out file, open for writing; InvalidInputError naming it when it cannot be. */
function openOut(path: string): number {
  try {
    return openSync(path, 'w');
  } catch (error) {
    throw new InvalidInputError(
      `--out ${path} cannot be written: ${fileErrorInWords(error, 'its folder does not exist')}`,
      'name a file in a folder you can write',
    );
  }
}

/**
 * Writes the events' lines a chunk at a time, waiting for the sink to drain: nothing but the
 * current page of rows and one chunk of text is held.
 */
async function writeExport(
  events: AsyncIterable<LedgerEvent>,
  format: 'jsonl' | 'csv',
  sink: NodeJS.WritableStream,
  wrote: (rows: number) => void,
): Promise<void> {
  const lines = format === 'csv' ? csvLines : jsonLines;
  let chunk = format === 'csv' ? `${CSV_HEADER}\n` : '';
  const flush = async (): Promise<void> => {
    if (chunk !== '' && !sink.write(chunk)) await once(sink, 'drain');
    chunk = '';
  };
  for await (const event of events) {
    for (const line of lines(event)) {
      chunk += line;
      if (chunk.length >= CHUNK_CHARS) await flush();
    }
    if (event.kind === 'rows') wrote(event.rows.length);
  }
  await flush();
}
