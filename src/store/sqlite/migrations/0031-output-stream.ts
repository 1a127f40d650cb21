/**
 * The output stream (docs/decisions/0029-live-output.md), as PostgreSQL's 0031: the runner copies
 * each run's new output into `output_chunks` about once a second, so a reader on any host sees a
 * run's output while it runs. A row is bytes of the log file `job-<job_id>-attempt-<attempt>.log`
 * from `start_byte`, written under the job's `epoch`; at most a window per attempt is kept.
 */
export default {
  version: 31,
  name: 'output-stream',
  sql: `
CREATE TABLE output_chunks (
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  attempt INTEGER NOT NULL CHECK (attempt >= 1),
  start_byte INTEGER NOT NULL CHECK (start_byte >= 0),
  epoch INTEGER NOT NULL,
  bytes BLOB NOT NULL CHECK (length(bytes) BETWEEN 1 AND 65536),
  PRIMARY KEY (job_id, attempt, start_byte, epoch)
) WITHOUT ROWID;
`,
};
