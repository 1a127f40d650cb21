/**
 * `baton audit verify --previous OLD.jsonl` (docs/decisions/0049, session 21): the proof that a ledger
 * `baton db copy` moved is the ledger it came from. The `ledger:continued` row names the old ledger's
 * last checkpoint but proves none of the copied rows, which stay unsealed on the new engine until its
 * first seal. This check closes that gap: the old export verifies under its own checkpoints, its last
 * checkpoint is the one the link names, and every row of it equals the row of the same id here, read
 * engine-neutrally (times to the microsecond, JSON by value), with no row here before the link that the
 * old ledger did not hold.
 */
import { canonicalJson, rowId, type Checkpoint } from '../../core/ledger.js';
import type { LedgerRowColumns } from '../../store/ledger-store.js';
import type { LedgerEvent } from './events.js';
import type { ShownOtherwise } from './export-format.js';
import { verifyEvents, type ContinuedLedger, type VerifyParams } from './verify.js';

type Events = AsyncIterable<LedgerEvent | ShownOtherwise>;

export interface PreviousProblem {
  /** The row's id; 0 for a problem of the whole (the link, the old ledger's own verification). */
  readonly id: number;
  readonly problem: 'link' | 'previous' | 'missing' | 'added' | 'edited';
  readonly detail: string;
}

export interface PreviousCheck {
  readonly ok: boolean;
  /** Rows of the old ledger compared with this one's. */
  readonly rows: number;
  /** The old ledger's last checkpoint, as the link should name it; null when it has none. */
  readonly checkpoint: { seq: number; hash: string; lastId: number; keyId: string } | null;
  readonly problems: readonly PreviousProblem[];
  readonly problemCount: number;
}

const KEPT_PROBLEMS = 20;

/**
 * Checks the old ledger (`previous`, read twice: once to verify, once to compare) against this one
 * (`current`, read once), which continues it by `continues` (null: it continues none).
 */
export async function checkPrevious(
  previous: () => Events,
  current: () => Events,
  continues: ContinuedLedger | null,
  params: Pick<VerifyParams, 'publicKeys'>,
): Promise<PreviousCheck> {
  const problems: PreviousProblem[] = [];
  let count = 0;
  const report = (problem: PreviousProblem): void => {
    count++;
    if (problems.length < KEPT_PROBLEMS) problems.push(problem);
  };
  let last: Checkpoint | null = null;
  const old = await verifyEvents(
    tapCheckpoints(previous(), (checkpoint) => (last = checkpoint)),
    params.publicKeys === undefined ? {} : { publicKeys: params.publicKeys },
  );
  const newest = last as Checkpoint | null;
  if (!old.ok) {
    const first = old.firstBad === null ? '' : ` (first: row ${old.firstBad.id} ${old.firstBad.problem})`;
    report({
      id: 0,
      problem: 'previous',
      detail: `the old ledger does not verify: ${old.problemCount} problems${first}`,
    });
  } else if (old.header?.complete === false) {
    report({ id: 0, problem: 'previous', detail: 'the old export was filtered: export the whole ledger' });
  }
  if (old.unsealed.count > 0) {
    const detail = `the old ledger has ${old.unsealed.count} unsealed rows: nothing proves what they said`;
    report({ id: 0, problem: 'previous', detail });
  }
  const checkpoint =
    newest === null
      ? null
      : { seq: newest.seq, hash: newest.hash, lastId: newest.lastId, keyId: newest.keyId };
  if (continues === null) {
    report({
      id: 0,
      problem: 'link',
      detail: 'this ledger has no ledger:continued row: it continues no other ledger',
    });
    return { ok: false, rows: 0, checkpoint, problems, problemCount: count };
  }
  const linkProblem = compareLink(continues, checkpoint);
  if (linkProblem !== null) report({ id: continues.id, problem: 'link', detail: linkProblem });
  const rows = await compareRows(previous(), current(), continues.id, report);
  return { ok: count === 0, rows, checkpoint, problems, problemCount: count };
}

/** Passes the events on, telling `seen` of each checkpoint (the last one told is the newest). */
async function* tapCheckpoints(events: Events, seen: (checkpoint: Checkpoint) => void): Events {
  for await (const event of events) {
    if (event.kind === 'checkpoint') seen(event.checkpoint);
    yield event;
  }
}

function compareLink(continues: ContinuedLedger, newest: PreviousCheck['checkpoint']): string | null {
  const named = (continues.checkpoint ?? null) as Record<string, unknown> | null;
  if (named === null && newest === null) return null;
  if (named === null || newest === null) {
    return named === null
      ? `the link names no checkpoint, but the old ledger's last is ${newest?.seq}`
      : `the link names checkpoint ${String(named['seq'])}, but the old ledger has none`;
  }
  const differing = (['seq', 'hash', 'lastId', 'keyId'] as const).filter(
    (field) => named[field] !== newest[field],
  );
  if (differing.length === 0) return null;
  return (
    `the link names checkpoint ${String(named['seq'])} (hash ${String(named['hash'])}), but the old ledger's last ` +
    `is ${newest.seq} (hash ${newest.hash}): ${differing.join(', ')} differ`
  );
}

async function* rowsOf(events: Events): AsyncGenerator<LedgerRowColumns> {
  for await (const event of events) if (event.kind === 'rows') yield* event.rows;
}

/** Merges the two ledgers by id up to the link; returns how many old rows were read. */
async function compareRows(
  previous: Events,
  current: Events,
  linkId: number,
  report: (problem: PreviousProblem) => void,
): Promise<number> {
  const olds = rowsOf(previous);
  const news = rowsOf(current);
  let old = await olds.next();
  let now = await news.next();
  let read = 0;
  const nowId = (): number => (now.done === true ? Infinity : Math.min(rowId(now.value), linkId));
  while (old.done !== true || nowId() < linkId) {
    const oldId = old.done === true ? Infinity : rowId(old.value);
    if (nowId() < oldId) {
      report({
        id: nowId(),
        problem: 'added',
        detail: 'a row before the link that the old ledger does not hold',
      });
      now = await news.next();
      continue;
    }
    read++;
    if (nowId() > oldId || now.done === true) {
      report({ id: oldId, problem: 'missing', detail: 'a row of the old ledger this ledger does not hold' });
    } else {
      const columns = differingColumns(old.value as LedgerRowColumns, now.value);
      if (columns.length > 0)
        report({ id: oldId, problem: 'edited', detail: `${columns.join(', ')} differ` });
      now = await news.next();
    }
    old = await olds.next();
  }
  return read;
}

/** The columns whose values differ once read engine-neutrally. */
function differingColumns(old: LedgerRowColumns, now: LedgerRowColumns): string[] {
  const names = [...new Set([...Object.keys(old), ...Object.keys(now)])].sort();
  return names.filter((name) => neutral(name, old[name]) !== neutral(name, now[name]));
}

/**
 * A column's value as both engines' rows can be compared: `at` in microseconds since the epoch
 * (SQLite keeps milliseconds, PostgreSQL prints its timestamptz), `detail` as canonical JSON of the
 * value (SQLite keeps the text, PostgreSQL the jsonb with its own key order), the rest as JSON.
 */
function neutral(name: string, value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (name === 'at') {
    if (typeof value === 'number') return `µs:${value * 1000}`;
    if (typeof value === 'string') return timestampMicros(value) ?? `text:${value}`;
  }
  if (name === 'detail' && typeof value === 'string') {
    try {
      return canonicalJson(JSON.parse(value));
    } catch {
      return `text:${value}`;
    }
  }
  return canonicalJson(value);
}

const PG_TIME =
  /^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::?(\d\d))?|Z)$/;

/** PostgreSQL's timestamptz text (any zone offset) in microseconds since the epoch; null when not one. */
function timestampMicros(text: string): string | null {
  const match = PG_TIME.exec(text);
  if (match === null) return null;
  const [, year, month, day, hour, minute, second, fraction = '', sign, oh = '0', om = '0'] = match;
  const ms = Date.UTC(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
  );
  const offsetMinutes = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const micros = BigInt(ms - offsetMinutes * 60_000) * 1000n + BigInt(fraction.padEnd(6, '0'));
  return `µs:${micros}`;
}
