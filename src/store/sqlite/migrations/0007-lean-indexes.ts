/**
 * Fewer index pages written per job transition (docs/decisions/0002, "less WAL per transition"):
 * - One partial index for active jobs by session and host instead of two: it holds only claimed
 *   and running jobs, so a lookup by host walks a few entries at most.
 * - No audit_by_job: a job's ledger rows all carry its task key (a conformance case checks it),
 *   so audit.list({ jobId }) goes through audit_by_key with the job's key, then the job id.
 */
export default {
  version: 7,
  name: 'lean-indexes',
  sql: `
DROP INDEX jobs_active_by_session;
DROP INDEX jobs_active_by_host;
CREATE INDEX jobs_active ON jobs (session_id, host) WHERE status IN ('claimed', 'running');
DROP INDEX audit_by_job;
`,
};
