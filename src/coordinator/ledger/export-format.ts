/**
 * The export's two formats. JSONL: one JSON object per line, `record` saying which: the `ledger`
 * header (engine, keys, filter), each `checkpoint` (with its leaves, base64), each `row` (every
 * column of the ledger row, as the engine stores it, under `row`), and an `end` line with the
 * counts, so a cut-off file is told from a whole one. CSV: the same records, one per line, with a
 * few columns to read in a spreadsheet and the JSONL line in the last column, `json`, which is
 * what `baton audit verify --file` reads.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { InvalidInputError } from '../../core/errors.js';
import { canonicalJson, type Checkpoint } from '../../core/ledger.js';
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

function csvRecord(event: Single): string {
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
  cells['json'] = jsonRecord(event);
  return CSV_COLUMNS.map((column) => csvCell(cells[column])).join(',');
}

/** The CSV lines of an event, one at a time, each ended by a newline (CSV_HEADER is the first line, once). */
export function* csvLines(event: LedgerEvent): Generator<string> {
  for (const record of records(event)) yield `${csvRecord(record)}\n`;
}

/** The last cell of a CSV line written by csvLines (a quoted field, quotes doubled). */
function lastCsvCell(line: string): string {
  if (!line.endsWith('"')) return line.slice(line.lastIndexOf(',') + 1);
  let searchFrom = line.length - 2;
  for (;;) {
    const quoteAt = line.lastIndexOf('"', searchFrom);
    if (quoteAt < 0) throw new Error('unterminated');
    if (line[quoteAt - 1] === '"') {
      searchFrom = quoteAt - 2;
      continue;
    }
    return line.slice(quoteAt + 1, -1).replace(/""/g, '"');
  }
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

/**
 * The events of an export file, streamed line by line (JSONL or CSV, told apart by the first
 * line). InvalidInputError for a line that is not an export record, or a file cut off before its
 * end line or whose counts disagree with it.
 */
export async function* readExport(path: string): AsyncGenerator<LedgerEvent> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
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
    try {
      event = asEvent(JSON.parse(csv ? lastCsvCell(line) : line) as Record<string, unknown>);
    } catch (error) {
      throw new InvalidInputError(
        `${path}:${lineNumber} is not a ledger export record (${(error as Error).message})`,
      );
    }
    if (ended) throw new InvalidInputError(`${path}:${lineNumber} comes after the end line`);
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
