/**
 * The output stream on SQLite (output-store.ts): a flush of every run of a host is one write
 * transaction, committed without its own fsync (writeNotDurable: output lost in a power cut is
 * still in the runner's log file). For each run held by the runner's session at its attempt and
 * epoch (the fence), what its window no longer holds, the attempt's rows of older runs that overlap
 * its new bytes and the job's earlier attempts are dropped, then its rows go in.
 */
import type { OutputRead, OutputRow } from '../../core/output-stream.js';
import { HELD_SQL } from '../job-guard.js';
import type { OutputStore } from '../output-store.js';
import type { SqliteExecutor, Sync } from './executor.js';

const HELD = `SELECT 1 AS held FROM jobs WHERE id = ? AND attempt = ? AND epoch = ? AND session_id = ?
  AND status IN ${HELD_SQL}`;
const DROP = `DELETE FROM output_chunks WHERE job_id = @job AND (attempt < @attempt
  OR (attempt = @attempt AND epoch < @epoch AND start_byte + length(bytes) > @first)
  OR (attempt = @attempt AND start_byte + length(bytes) <= @last - @keep))`;
const INSERT = `INSERT INTO output_chunks (job_id, attempt, start_byte, epoch, bytes) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (job_id, attempt, start_byte, epoch) DO UPDATE SET bytes = excluded.bytes`;
const READ = `SELECT start_byte, bytes FROM output_chunks
  WHERE job_id = ? AND attempt = ? AND start_byte + length(bytes) > ? ORDER BY start_byte, epoch LIMIT 64`;
const END = `SELECT coalesce(max(start_byte + length(bytes)), 0) AS size, max(epoch) AS epoch FROM output_chunks
  WHERE job_id = @job AND attempt = @attempt`;
const RUN_FROM = `SELECT min(start_byte) AS run_from FROM output_chunks
  WHERE job_id = @job AND attempt = @attempt AND epoch = @epoch`;

/** The rows of each run (job, attempt, epoch), in the order given. */
function byRun(rows: readonly OutputRow[]): OutputRow[][] {
  const runs = new Map<string, OutputRow[]>();
  for (const row of rows) {
    const key = `${row.job}/${row.attempt}/${row.epoch}`;
    runs.set(key, [...(runs.get(key) ?? []), row]);
  }
  return [...runs.values()];
}

/** Written synchronously; the store lifts it with fromSync (executor.ts). */
export function sqliteOutput(exec: SqliteExecutor): Sync<Omit<OutputStore['output'], 'trim'>> {
  const append = (session: number, rows: readonly OutputRow[]): number[] => {
    const written: number[] = [];
    for (const run of byRun(rows)) {
      const [head] = run;
      if (head === undefined) continue;
      const { job, attempt, epoch } = head;
      if (exec.prepare(HELD).get(job, attempt, epoch, session) === undefined) continue;
      const first = Math.min(...run.map((row) => row.offset));
      const last = Math.max(...run.map((row) => row.offset + row.bytes.length));
      const keep = Math.min(...run.map((row) => row.keep));
      exec.prepare(DROP).run({ job, attempt, epoch, first, last, keep });
      for (const row of run) {
        if (row.bytes.length === 0 || row.offset + row.bytes.length <= last - keep) continue;
        const bytes = Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.length);
        exec.prepare(INSERT).run(job, attempt, row.offset, epoch, bytes);
      }
      written.push(job);
    }
    return written;
  };
  return {
    append: ({ session, rows }) =>
      rows.length === 0 ? [] : exec.writeNotDurable(() => append(session, rows)),
    read: ({ job, attempt, offset }): OutputRead =>
      exec.read(() => {
        const rows = exec.prepare(READ).all(job, attempt, offset) as { start_byte: number; bytes: Buffer }[];
        const { size, epoch } = exec.prepare(END).get({ job, attempt }) as {
          size: number;
          epoch: number | null;
        };
        const run =
          epoch === null
            ? null
            : {
                epoch,
                from: (exec.prepare(RUN_FROM).get({ job, attempt, epoch }) as { run_from: number }).run_from,
              };
        return { rows: rows.map((row) => ({ offset: row.start_byte, bytes: row.bytes })), size, run };
      }),
  };
}
