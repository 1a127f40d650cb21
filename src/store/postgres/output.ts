/**
 * The output stream on PostgreSQL (output-store.ts): a flush of every run of a host is one
 * statement. `r` unnests the rows; `held` locks their jobs FOR SHARE, in id order, so a write
 * racing a takeover (a requeue, a rescue, a cancel) waits for it and, under READ COMMITTED, checks
 * the newest row: it commits before the takeover or writes nothing; `ok` keeps the rows whose job
 * is still held by the runner's session at their attempt and epoch (the fence); `w` is each
 * written run's first and newest byte and the bytes to keep; `d` drops what the run's window no
 * longer holds, the attempt's rows of older runs that overlap its new bytes, and the job's earlier
 * attempts; then the rows go in. A row written again (a flush whose answer was lost) takes the
 * newer bytes, and is not dropped by `d`: one statement may not both delete and update a row. An
 * empty row (a run's last flush with nothing new) only trims.
 */
import type { OutputRead } from '../../core/output-stream.js';
import { HELD_SQL } from '../job-guard.js';
import type { OutputStore } from '../output-store.js';
import type { PgExecutor } from './executor.js';

const APPEND = `WITH r AS (
  SELECT * FROM unnest($2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bytea[], $7::bigint[])
    AS r(job_id, attempt, epoch, start_byte, bytes, keep)
), held AS (
  SELECT id, attempt, epoch, session_id, status FROM jobs WHERE id = ANY($2::bigint[]) ORDER BY id FOR SHARE
), ok AS (
  SELECT r.* FROM r JOIN held jobs ON jobs.id = r.job_id
  WHERE jobs.attempt = r.attempt AND jobs.epoch = r.epoch AND jobs.session_id = $1::bigint
    AND jobs.status IN ${HELD_SQL}
), w AS (
  SELECT job_id, attempt, epoch, min(start_byte) AS first, max(start_byte + length(bytes)) AS last,
    min(keep) AS keep
  FROM ok GROUP BY job_id, attempt, epoch
), d AS (
  DELETE FROM output_chunks c USING w
  WHERE c.job_id = w.job_id AND (c.attempt < w.attempt
    OR (c.attempt = w.attempt AND c.epoch < w.epoch AND c.start_byte + length(c.bytes) > w.first)
    OR (c.attempt = w.attempt AND c.start_byte + length(c.bytes) <= w.last - w.keep
      AND NOT EXISTS (SELECT 1 FROM ok WHERE (ok.job_id, ok.attempt, ok.start_byte, ok.epoch)
        = (c.job_id, c.attempt, c.start_byte, c.epoch) AND ok.start_byte + length(ok.bytes) > w.last - w.keep)))
), i AS (
  INSERT INTO output_chunks (job_id, attempt, start_byte, epoch, bytes)
  SELECT ok.job_id, ok.attempt, ok.start_byte, ok.epoch, ok.bytes FROM ok JOIN w USING (job_id, attempt, epoch)
  WHERE ok.start_byte + length(ok.bytes) > w.last - w.keep AND length(ok.bytes) > 0
  ON CONFLICT (job_id, attempt, start_byte, epoch) DO UPDATE SET bytes = excluded.bytes
)
SELECT job_id FROM w`;

/** At most 64 rows from the offset, and the stream's end over all of the attempt's rows, in one statement. */
const READ = `SELECT e.size, e.epoch::float8 AS epoch, (
  SELECT min(start_byte)::float8 FROM output_chunks WHERE job_id = $1::bigint AND attempt = $2::int AND epoch = e.epoch
) AS run_from, r.start_byte, r.bytes FROM (
  SELECT coalesce(max(start_byte + length(bytes)), 0)::float8 AS size, max(epoch) AS epoch FROM output_chunks
  WHERE job_id = $1::bigint AND attempt = $2::int
) e LEFT JOIN LATERAL (
  SELECT start_byte::float8 AS start_byte, epoch, bytes FROM output_chunks
  WHERE job_id = $1::bigint AND attempt = $2::int AND start_byte + length(bytes) > $3::bigint
  ORDER BY start_byte, epoch LIMIT 64
) r ON true
ORDER BY r.start_byte, r.epoch`;

export function postgresOutput(exec: PgExecutor): Omit<OutputStore['output'], 'trim'> {
  return {
    append: async ({ session, rows }) => {
      if (rows.length === 0) return [];
      const column = <K extends keyof (typeof rows)[number]>(name: K) => rows.map((row) => row[name]);
      const bytes = rows.map((row) => Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.length));
      const written = await exec.rows<{ job_id: string | number }>(APPEND, [
        session,
        column('job'),
        column('attempt'),
        column('epoch'),
        column('offset'),
        bytes,
        column('keep'),
      ]);
      return [...new Set(written.map((row) => Number(row.job_id)))];
    },
    read: async ({ job, attempt, offset }): Promise<OutputRead> => {
      const rows = await exec.rows<{
        size: number;
        epoch: number | null;
        run_from: number | null;
        start_byte: number | null;
        bytes: Buffer | null;
      }>(READ, [job, attempt, offset]);
      const kept = rows.flatMap((row) =>
        row.start_byte === null || row.bytes === null ? [] : [{ offset: row.start_byte, bytes: row.bytes }],
      );
      const head = rows[0];
      const run =
        head === undefined || head.epoch === null ? null : { epoch: head.epoch, from: head.run_from ?? 0 };
      return { rows: kept, size: head?.size ?? 0, run };
    },
  };
}
