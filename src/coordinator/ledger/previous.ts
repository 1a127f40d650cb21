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
import type { PrunedRange } from '../../core/ledger-verify.js';
import type { LedgerRowColumns } from '../../store/ledger-store.js';
import type { LedgerEvent } from './events.js';
import type { ShownOtherwise } from './export-format.js';
import { verifyEvents, type ContinuedLedger, type VerifyParams } from './verify.js';

type Events = AsyncIterable<LedgerEvent | ShownOtherwise>;

export interface PreviousProblem {
  /** The row's id; null for a problem of the whole (the link, the old ledger's own verification). */
  readonly id: number | null;
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
  /** Old rows this ledger has pruned since (inside its prune records' ranges): not compared. */
  readonly prunedHere: number;
  /** Whose keys the old export was checked with: `pinned` (--public-key) or its own header's. */
  readonly keys: 'pinned' | 'source';
}

const KEPT_PROBLEMS = 20;

/**
 * Checks the old ledger (`previous`, read twice: once to verify, once to compare) against this one
 * (`current`, read once), which continues it by `continues` (null: it continues none) and has pruned
 * `pruned` since (its verify report's ranges).
 */
export async function checkPrevious(
  previous: () => Events,
  current: () => Events,
  here: { readonly continues: ContinuedLedger | null; readonly pruned: readonly PrunedRange[] },
  params: Pick<VerifyParams, 'publicKeys'>,
): Promise<PreviousCheck> {
  const problems: PreviousProblem[] = [];
  let count = 0;
  const report = (problem: PreviousProblem): void => {
    count++;
    if (problems.length < KEPT_PROBLEMS) problems.push(problem);
  };
  let last: Checkpoint | null = null;
  const keys = params.publicKeys ?? [];
  const old = await verifyEvents(
    tapCheckpoints(previous(), (checkpoint) => (last = checkpoint)),
    keys.length === 0 ? {} : { publicKeys: keys },
  );
  const newest = last as Checkpoint | null;
  oldLedgerProblems(old, report);
  const checkpoint =
    newest === null
      ? null
      : { seq: newest.seq, hash: newest.hash, lastId: newest.lastId, keyId: newest.keyId };
  const done = (rows: number, prunedHere: number): PreviousCheck => ({
    ok: count === 0,
    rows,
    checkpoint,
    problems,
    problemCount: count,
    prunedHere,
    keys: old.keys,
  });
  if (here.continues === null) {
    const pruned = here.pruned.length === 0 ? '' : ' (or its prune records removed it: check before pruning)';
    report({ id: null, problem: 'link', detail: `this ledger has no ledger:continued row${pruned}` });
    return done(0, 0);
  }
  const linkProblem = compareLink(here.continues, checkpoint);
  if (linkProblem !== null) report({ id: here.continues.id, problem: 'link', detail: linkProblem });
  const { rows, prunedHere } = await compareRows(
    previous(),
    current(),
    { continues: here.continues, pruned: here.pruned },
    report,
  );
  return done(rows, prunedHere);
}

/** What makes the old export itself no evidence: it does not verify, was filtered, or has unsealed rows. */
function oldLedgerProblems(
  old: Awaited<ReturnType<typeof verifyEvents>>,
  report: (problem: PreviousProblem) => void,
): void {
  if (!old.ok) {
    const first = old.firstBad === null ? '' : ` (first: row ${old.firstBad.id} ${old.firstBad.problem})`;
    report({
      id: null,
      problem: 'previous',
      detail: `the old ledger does not verify: ${old.problemCount} problems${first}`,
    });
  } else if (old.header?.complete === false) {
    report({ id: null, problem: 'previous', detail: 'the old export was filtered: export the whole ledger' });
  }
  if (old.unsealed.count > 0) {
    const detail = `the old ledger has ${old.unsealed.count} unsealed rows: nothing proves what they said`;
    report({ id: null, problem: 'previous', detail });
  }
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

/** One ledger's rows in id order, and the engine its header names (known before its first row). */
interface Side {
  readonly rows: AsyncGenerator<LedgerRowColumns>;
  /** Whether its `detail` is JSON text (SQLite keeps the text; PostgreSQL's jsonb comes parsed). */
  readonly detailIsText: () => boolean;
}

function sideOf(events: Events): Side {
  let engine: string | null = null;
  async function* rows(): AsyncGenerator<LedgerRowColumns> {
    for await (const event of events) {
      if (event.kind === 'header') engine = event.header.engine;
      else if (event.kind === 'rows') yield* event.rows;
    }
  }
  return { rows: rows(), detailIsText: () => engine === 'sqlite' };
}

/** Merges the two ledgers by id up to the link; old rows inside this ledger's pruned ranges are skipped. */
async function compareRows(
  previous: Events,
  current: Events,
  here: { readonly continues: ContinuedLedger; readonly pruned: readonly PrunedRange[] },
  report: (problem: PreviousProblem) => void,
): Promise<{ rows: number; prunedHere: number }> {
  const linkId = here.continues.id;
  const olds = sideOf(previous);
  const news = sideOf(current);
  const prunedHere = (id: number): boolean =>
    here.pruned.some((range) => id >= range.firstId && id <= range.lastId);
  let old = await olds.rows.next();
  let now = await news.rows.next();
  let read = 0;
  let skipped = 0;
  const nowId = (): number => (now.done === true ? Infinity : Math.min(rowId(now.value), linkId));
  while (old.done !== true || nowId() < linkId) {
    const oldId = old.done === true ? Infinity : rowId(old.value);
    if (nowId() < oldId) {
      report({
        id: nowId(),
        problem: 'added',
        detail: 'a row before the link that the old ledger does not hold',
      });
      now = await news.rows.next();
      continue;
    }
    read++;
    if (nowId() > oldId || now.done === true) {
      if (prunedHere(oldId)) skipped++;
      else
        report({
          id: oldId,
          problem: 'missing',
          detail: 'a row of the old ledger this ledger does not hold',
        });
    } else {
      const columns = differingColumns(old.value as LedgerRowColumns, now.value, olds, news);
      if (columns.length > 0)
        report({ id: oldId, problem: 'edited', detail: `${columns.join(', ')} differ` });
      now = await news.rows.next();
    }
    old = await olds.rows.next();
  }
  return { rows: read, prunedHere: skipped };
}

/** The columns whose values differ once read engine-neutrally. */
function differingColumns(old: LedgerRowColumns, now: LedgerRowColumns, olds: Side, news: Side): string[] {
  const names = [...new Set([...Object.keys(old), ...Object.keys(now)])].sort();
  return names.filter(
    (name) => neutral(name, old[name], olds.detailIsText()) !== neutral(name, now[name], news.detailIsText()),
  );
}

/**
 * A column's value as both engines' rows can be compared: `at` in microseconds since the epoch
 * (SQLite keeps milliseconds, PostgreSQL prints its timestamptz), `detail` as canonical JSON of the
 * value (SQLite's text parsed; PostgreSQL's jsonb as it comes, with its own key order), the rest as JSON.
 */
function neutral(name: string, value: unknown, detailIsText: boolean): string {
  if (value === undefined || value === null) return 'null';
  if (name === 'at') {
    if (typeof value === 'number') return `µs:${value * 1000}`;
    if (typeof value === 'string') return timestampMicros(value) ?? `text:${value}`;
  }
  // Only the text an engine stores JSON as is parsed: a jsonb string stays a string.
  if (name === 'detail' && detailIsText && typeof value === 'string') {
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
