/**
 * `baton audit verify`: recomputes every seal of the database's ledger or of an export (`--file`)
 * and exits 1 naming the first bad row; with `--previous OLD.jsonl`, also proves that this ledger
 * continues the one `baton db copy` moved from (coordinator/ledger/previous.ts).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type { Command } from 'commander';
import { readAnchors } from '../../coordinator/ledger/anchor.js';
import { readExport } from '../../coordinator/ledger/export-format.js';
import { parsePublicKey } from '../../coordinator/ledger/keys.js';
import { checkPrevious, type PreviousCheck } from '../../coordinator/ledger/previous.js';
import { verifyEvents, type VerifyParams, type VerifyReport } from '../../coordinator/ledger/verify.js';
import { InvalidInputError } from '../../core/errors.js';
import { fileErrorInWords } from '../../core/file-errors.js';
import { Exit } from '../exit-codes.js';
import { continuedLines, previousLines } from '../ledger-continued.js';
import { Output } from '../output.js';
import { progressBar } from '../progress.js';
import { withCoordinator, type GlobalOptions } from '../run.js';
import { rowsText } from '../../core/text.js';

export interface VerifyOptions {
  readonly file?: string;
  readonly anchor?: string;
  readonly publicKey?: string[];
  readonly partial?: boolean;
  readonly retired?: string[];
  readonly previous?: string;
}

type Printed = VerifyReport & {
  source: string;
  engine: string | null;
  partial: boolean;
  previous?: PreviousCheck;
};

function verifyParams(options: VerifyOptions): VerifyParams {
  if (options.partial === true && options.file === undefined) {
    throw new InvalidInputError('--partial needs --file', 'the database is always checked whole');
  }
  if (options.partial === true && options.previous !== undefined) {
    throw new InvalidInputError(
      '--previous needs the whole ledger, not --partial',
      'export the new ledger whole, or check the database',
    );
  }
  return {
    publicKeys: (options.publicKey ?? []).map(parsePublicKey),
    anchors: options.anchor === undefined ? [] : readAnchors(options.anchor),
    partial: options.partial === true,
    retired: (options.retired ?? []).map((keyId) => {
      if (/^[0-9a-f]{16}$/.test(keyId)) return keyId;
      throw new InvalidInputError(
        `--retired ${JSON.stringify(keyId)} is not a ledger key id`,
        'give 16 hex digits',
      );
    }),
  };
}

export async function verify(options: VerifyOptions, cmd: Command): Promise<void> {
  const params = verifyParams(options);
  if (options.previous !== undefined) assertReadable(options.previous);
  const globals = cmd.optsWithGlobals<GlobalOptions>();
  if (options.file !== undefined) {
    const file = options.file;
    const { header, ...report } = await verifyEvents(readExport(file), params);
    const filtered = header?.complete === false;
    const previous = await previousOf(options, params, report, () => readExport(file));
    return printVerify(
      {
        ...report,
        source: file,
        engine: header?.engine ?? null,
        partial: params.partial === true,
        ...previous,
      },
      new Output(globals.json === true),
      filtered && params.partial !== true
        ? 'the file says it was filtered: its rows were held to being the whole ledger (pass --partial)'
        : params.partial === true
          ? `partial: only the rows in the file were checked (${report.unchecked} unchecked)`
          : null,
    );
  }
  await withCoordinator(
    cmd,
    async (baton, out) => {
      const bar = progressBar('verifying', await baton.ledger.size());
      const report = await baton.ledger.verify(params, (rows) => bar.tick(rows));
      bar.done();
      const previous = await previousOf(options, params, report, () => baton.ledger.events());
      printVerify({ ...report, source: 'database', partial: false, ...previous }, out, null);
    },
    { scan: true },
  );
}

/**
 * No checkpoint: nothing was verified. Not a failure (exit 0): nothing is damaged, and a ledger
 * nobody chose to seal is the default; but said plainly, with how to start sealing.
 */
const NOT_SEALED = (rows: number): string =>
  `ledger not sealed: ${rowsText(rows)} and no checkpoint, so nothing was verified — to seal it, run ` +
  '`baton ledger init` (it makes a key and registers it), then restart a `baton up` that can lead ' +
  'with the key file in its .baton/; if a key is registered already (`baton ledger key`), copy its ' +
  'file there from the host where `baton ledger init` ran';

/**
 * No checkpoint left, yet prune records: retention (`baton audit prune`) removed every sealed row with
 * its checkpoints. The records themselves were checked (a bad one fails the answer, exit 1), but no
 * row: those since the last record wait for the next seal. Exit 0 as NOT_SEALED, and not its advice:
 * the key exists already. An export is sealed by sealing its database and exporting again.
 */
function allPruned(report: Printed): string {
  const last = report.pruned.at(-1);
  const first = report.pruned[0];
  if (last === undefined || first === undefined) return NOT_SEALED(report.rows);
  const since = report.unsealed.count;
  const rows = since === 1 ? 'the 1 row since has' : `the ${since} rows since have`;
  const seal =
    report.source === 'database'
      ? '`baton audit seal` with the ledger key seals them, as does a `baton up` that can lead with it'
      : 'seal the database (`baton audit seal` with the ledger key) and export it again';
  return (
    `ledger pruned, not sealed since: retention removed every sealed row (ids ${first.firstId}..` +
    `${last.lastId}, prune record ${last.checkpoint} the last) and ${rows} no checkpoint yet, so no ` +
    `row was verified — ${seal}`
  );
}

function printVerify(report: Printed, out: Output, note: string | null): void {
  // A move that does not check out fails the whole answer, as the exit code says.
  const answer = report.previous === undefined ? report : { ...report, ok: report.ok && report.previous.ok };
  out.result(answer, () => {
    const trust =
      report.keys === 'pinned' ? `pinned keys ${report.keyIds.join(', ')}` : "the source's own keys";
    const pruned = report.pruned.map(
      (record) =>
        `pruned: ids ${record.firstId}..${record.lastId} (${rowsText(record.rowCount)}, record ${record.checkpoint})`,
    );
    const from = report.unsealed.firstId === null ? '' : ` from ${report.unsealed.firstId}`;
    const anchors = report.anchorsChecked > 0 ? ` and ${report.anchorsChecked} anchors` : '';
    const intact = `ledger intact: ${rowsText(report.rows)}, ${report.seals} checkpoint(s)`;
    const head = !report.ok
      ? `ledger NOT intact: ${report.problemCount} problem${report.problemCount === 1 ? '' : 's'}`
      : report.seals === 0
        ? report.pruned.length === 0
          ? NOT_SEALED(report.rows)
          : allPruned(report)
        : `${intact}, sealed through row ${report.sealedThrough}`;
    return [
      head,
      ...report.problems.slice(0, SHOWN).map((bad) => `  row ${bad.id} ${bad.problem}: ${bad.detail}`),
      ...notShown(report),
      `  unsealed: ${rowsText(report.unsealed.count)}${from}`,
      ...pruned.map((line) => `  ${line}`),
      ...(note === null ? [] : [`  ${note}`]),
      ...continuedLines(report.continues),
      ...(report.previous === undefined ? [] : previousLines(report.previous, report.continues)),
      `  checked with ${trust}${anchors} (${report.source})`,
    ];
  });
  if (!report.ok || report.previous?.ok === false) throw new Exit(1);
}

/** The `--previous` check, read after the ledger's own (`previous` absent when not asked for). */
async function previousOf(
  options: VerifyOptions,
  params: VerifyParams,
  report: VerifyReport,
  current: () => ReturnType<typeof readExport>,
): Promise<{ previous?: PreviousCheck }> {
  const file = options.previous;
  if (file === undefined) return {};
  const here = { continues: report.continues, pruned: report.pruned };
  return { previous: await checkPrevious(() => readExport(file), current, here, params) };
}

/** Before the (long) verify: the --previous file opens and starts as an export does. */
function assertReadable(file: string): void {
  const fix = "pass the old ledger's export (`baton audit export --db OLD.db --format jsonl`)";
  let head: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const bytes = Buffer.alloc(64);
      head = bytes.subarray(0, readSync(fd, bytes, 0, 64, 0)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw new InvalidInputError(
      `--previous ${file} cannot be read: ${fileErrorInWords(error, 'it does not exist')}`,
      fix,
    );
  }
  if (!head.startsWith('{"record":"ledger"') && !head.startsWith('record,')) {
    throw new InvalidInputError(`--previous ${file} is not a ledger export`, fix);
  }
}

/** Problems listed one a line; the rest counted, so that the head's count and the lines agree. */
const SHOWN = 10;

function notShown(report: VerifyReport): string[] {
  const rest = report.problemCount - Math.min(SHOWN, report.problems.length);
  return rest > 0
    ? [`  and ${rest} more problem${rest === 1 ? '' : 's'} not shown (--json lists those it holds)`]
    : [];
}
