/**
 * The output stream (docs/decisions/0029-live-output.md): the runner copies each run's new output
 * into `output_chunks` about once a second, so a reader on any host sees a run's output while it
 * runs. A row is bytes of the log file `job-<job_id>-attempt-<attempt>.log` from `start_byte`,
 * written under the job's `epoch`; at most a window per attempt is kept (the store trims it as it
 * appends). The key leads with (job, attempt, offset), the order every read takes.
 */
export default {
  version: 31,
  name: 'output-stream',
  sql: `
CREATE TABLE output_chunks (
  job_id bigint NOT NULL REFERENCES jobs (id),
  attempt integer NOT NULL CHECK (attempt >= 1),
  start_byte bigint NOT NULL CHECK (start_byte >= 0),
  epoch bigint NOT NULL,
  bytes bytea NOT NULL CHECK (length(bytes) BETWEEN 1 AND 65536),
  PRIMARY KEY (job_id, attempt, start_byte, epoch)
);
`,
};
