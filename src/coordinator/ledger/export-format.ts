/**
 * The export's two formats. JSONL: one JSON object per line, `record` saying which: the `ledger`
 * header (engine, keys, filter), each `checkpoint` (with its leaves, base64), each `row` (every
 * column of the ledger row, as the engine stores it, under `row`), and an `end` line with the
 * counts, so a cut-off file is told from a whole one. CSV: the same records, one per line, with a
 * few columns to read in a spreadsheet and the JSONL line in the last column, `json`, which is
 * what `baton audit verify --file` reads.
 */
import { closeSync, createReadStream, fstatSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { InvalidInputError } from '../../core/errors.js';
import { fileErrorInWords } from '../../core/file-errors.js';
import { canonicalJson, rowId, type Checkpoint } from '../../core/ledger.js';
import type { LedgerRowColumns } from '../../store/ledger-store.js';
import type { LedgerEvent, LedgerHeader } from './events.js';

const PAGE_ROWS = 1000;

export type ExportFormat = 'jsonl' | 'csv';

const CSV_COLUMNS = [
  'record',
  'checkpoint',
  'id',
  'at',
  'type',
  'task_key',
  'job_id',
  'session_id',
  'host',
  'epoch',
  'detail',
  'json',
] as const;

type OneRow = { readonly checkpoint: number | null; readonly columns: LedgerRowColumns };
type Single = Exclude<LedgerEvent, { kind: 'rows' }> | ({ readonly kind: 'row' } & OneRow);

/** An event's records one by one: a page of rows is one record per row. */
function* records(event: LedgerEvent): Generator<Single> {
  if (event.kind !== 'rows') yield event;
  else for (const columns of event.rows) yield { kind: 'row', checkpoint: event.checkpoint, columns };
}

/** The bytes in base64, read where they are (a seal's leaves are 320 KB: no copy). */
function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

function jsonRecord(event: Single): string {
  switch (event.kind) {
    case 'header':
      return JSON.stringify({ record: 'ledger', ...event.header });
    case 'checkpoint':
      return JSON.stringify({
        record: 'checkpoint',
        ...event.checkpoint,
        leaves: event.leaves === null ? null : base64(event.leaves),
      });
    case 'row':
      return `{"record":"row","checkpoint":${event.checkpoint ?? 'null'},"row":${canonicalJson(event.columns)}}`;
    case 'end':
      return JSON.stringify({ record: 'end', rows: event.rows, checkpoints: event.checkpoints });
  }
}

/**
 * The JSONL lines of an event, one at a time, each ended by a newline: a page of rows is never one
 * string (a thousand rows' text is a large object V8 keeps until a full collection).
 */
export function* jsonLines(event: LedgerEvent): Generator<string> {
  for (const record of records(event)) yield `${jsonRecord(record)}\n`;
}

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = (typeof value === 'string' ? value : JSON.stringify(value)).replace(/[\r\n]+/g, ' ');
  return /[",]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const CSV_HEADER = CSV_COLUMNS.join(',');

/** A record's spreadsheet cells, every CSV column but `json`, as the writer fills them. */
function displayCells(event: Single): Record<string, unknown> {
  const cells: Record<string, unknown> = {};
  if (event.kind === 'header') cells['record'] = 'ledger';
  else if (event.kind === 'end') cells['record'] = 'end';
  else if (event.kind === 'checkpoint') {
    Object.assign(cells, {
      record: 'checkpoint',
      checkpoint: event.checkpoint.seq,
      id: event.checkpoint.lastId,
    });
  } else {
    Object.assign(cells, event.columns, { record: 'row', checkpoint: event.checkpoint });
  }
  return cells;
}

function csvRecord(event: Single): string {
  const cells = displayCells(event);
  cells['json'] = jsonRecord(event);
  return CSV_COLUMNS.map((column) => csvCell(cells[column])).join(',');
}

/** The CSV lines of an event, one at a time, each ended by a newline (CSV_HEADER is the first line, once). */
export function* csvLines(event: LedgerEvent): Generator<string> {
  for (const record of records(event)) yield `${csvRecord(record)}\n`;
}

/** The cells of a CSV line written by csvLines: a quoted cell has its quotes doubled. */
function csvCells(line: string): string[] {
  const cells: string[] = [];
  for (let at = 0; ; at++) {
    if (line[at] === '"') {
      let text = '';
      for (let from = at + 1; ;) {
        const quote = line.indexOf('"', from);
        if (quote < 0) throw new Error('a quoted cell is not closed');
        text += line.slice(from, quote);
        from = quote + 2;
        if (line[quote + 1] !== '"') {
          at = quote + 1;
          break;
        }
        text += '"';
      }
      cells.push(text);
    } else {
      const comma = line.indexOf(',', at);
      cells.push(line.slice(at, comma < 0 ? line.length : comma));
      at = comma < 0 ? line.length : comma;
    }
    if (at >= line.length) break;
    if (line[at] !== ',') throw new Error('a quoted cell is followed by more than a comma');
  }
  if (cells.length !== CSV_COLUMNS.length)
    throw new Error(`${cells.length} cells, not ${CSV_COLUMNS.length}`);
  return cells;
}

/** A CSV line whose spreadsheet cells say other than its `json` cell, which is what is verified. */
export interface ShownOtherwise {
  readonly kind: 'shown-otherwise';
  /** The row's id (a checkpoint's last id; 0 for the header and end lines). */
  readonly id: number;
  readonly checkpoint: number | null;
  readonly detail: string;
}

function sameCell(shown: string, value: unknown): boolean {
  if (value === null || value === undefined) return shown === '';
  if (typeof value === 'string') return shown === value.replace(/[\r\n]+/g, ' ');
  try {
    return canonicalJson(JSON.parse(shown)) === canonicalJson(value);
  } catch {
    return false;
  }
}

/**
 * A person reads the CSV's first columns in a spreadsheet; the verifier reads its last. Each
 * shown cell must say what the json cell does (in canonical JSON where it is not text), or the
 * line is reported: an edit made for the reader's eyes only.
 */
function shownOtherwise(cells: readonly string[], event: Single, lineAt: string): ShownOtherwise | null {
  const expected = displayCells(event);
  const column = CSV_COLUMNS.find(
    (name, index) => name !== 'json' && !sameCell(cells[index] ?? '', expected[name]),
  );
  if (column === undefined) return null;
  const shown = cells[CSV_COLUMNS.indexOf(column)] ?? '';
  const [id, checkpoint] =
    event.kind === 'row'
      ? [rowId(event.columns), event.checkpoint]
      : event.kind === 'checkpoint'
        ? [event.checkpoint.lastId, event.checkpoint.seq]
        : [0, null];
  const says = JSON.stringify(csvCell(expected[column]));
  const detail = `${lineAt}: its ${column} cell shows ${JSON.stringify(shown)}, its json cell says ${says}`;
  return { kind: 'shown-otherwise', id, checkpoint, detail };
}

function asEvent(record: Record<string, unknown>): Single {
  switch (record['record']) {
    case 'ledger': {
      const header: Record<string, unknown> = { ...record };
      delete header['record'];
      return { kind: 'header', header: header as unknown as LedgerHeader };
    }
    case 'checkpoint': {
      const { leaves, ...checkpoint } = record;
      delete checkpoint['record'];
      const bytes = typeof leaves === 'string' ? new Uint8Array(Buffer.from(leaves, 'base64')) : null;
      return { kind: 'checkpoint', checkpoint: checkpoint as unknown as Checkpoint, leaves: bytes };
    }
    case 'row': {
      const columns = record['row'];
      if (typeof columns !== 'object' || columns === null) throw new Error('a row line without its row');
      const seq = record['checkpoint'];
      return {
        kind: 'row',
        checkpoint: typeof seq === 'number' ? seq : null,
        columns: columns as Record<string, unknown>,
      };
    }
    case 'end':
      return { kind: 'end', rows: Number(record['rows']), checkpoints: Number(record['checkpoints']) };
    default:
      throw new Error(`an unknown record ${JSON.stringify(record['record'])}`);
  }
}

/** The export file, open for reading; InvalidInputError naming it when it cannot be read. */
function openExport(path: string): number {
  const refuse = (why: string): never => {
    throw new InvalidInputError(
      `the export file ${path} cannot be read: ${why}`,
      'pass the file `baton audit export --format jsonl|csv` wrote',
    );
  };
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    return refuse(fileErrorInWords(error, 'it does not exist'));
  }
  if (fstatSync(fd).isDirectory()) {
    closeSync(fd);
    refuse('it is a folder');
  }
  return fd;
}

/**
 * The events of an export file, streamed line by line (JSONL or CSV, told apart by the first
 * line). InvalidInputError for a line that is not an export record, or a file cut off before its
 * end line or whose counts disagree with it.
 */
export async function* readExport(path: string): AsyncGenerator<LedgerEvent | ShownOtherwise> {
  const lines = createInterface({
    input: createReadStream('', { fd: openExport(path) }),
    crlfDelay: Infinity,
  });
  let csv: boolean | null = null;
  let lineNumber = 0;
  let rows = 0;
  let ended = false;
  let page: { checkpoint: number | null; rows: LedgerRowColumns[] } | null = null;
  for await (const line of lines) {
    lineNumber++;
    if (line.trim() === '') continue;
    if (csv === null) {
      csv = line === CSV_HEADER;
      if (csv) continue;
    }
    let event: Single;
    let cells: string[] | null = null;
    try {
      cells = csv ? csvCells(line) : null;
      event = asEvent(JSON.parse(cells === null ? line : (cells.at(-1) ?? '')) as Record<string, unknown>);
    } catch (error) {
      throw new InvalidInputError(
        `${path}:${lineNumber} is not a ledger export record (${(error as Error).message})`,
      );
    }
    if (ended) throw new InvalidInputError(`${path}:${lineNumber} comes after the end line`);
    const shown = cells === null ? null : shownOtherwise(cells, event, `${path}:${lineNumber}`);
    if (shown !== null) yield shown;
    if (event.kind === 'row') {
      rows++;
      // Rows go on in pages, as they came out of the database.
      if (page !== null && (page.checkpoint !== event.checkpoint || page.rows.length >= PAGE_ROWS)) {
        yield { kind: 'rows', ...page };
        page = null;
      }
      page ??= { checkpoint: event.checkpoint, rows: [] };
      page.rows.push(event.columns);
      continue;
    }
    if (page !== null) yield { kind: 'rows', ...page };
    page = null;
    if (event.kind === 'end') {
      ended = true;
      if (event.rows !== rows) {
        throw new InvalidInputError(`${path} says it holds ${event.rows} rows, and holds ${rows}`);
      }
    }
    yield event;
  }
  if (!ended) throw new InvalidInputError(`${path} ends before its end line: the export is cut off`);
}
