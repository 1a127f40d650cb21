/**
 * The queue split by whether a job has a command (docs/decisions/0047, "Loose ends (session 20)"):
 * the dispatcher walks the jobs with a command apart from those without, and each walk went down
 * `jobs_queue` past every queued job of the other kind, so a tick at 100k queued jobs of one kind
 * read all 100k to find none of the other. Each index holds one kind only, so each walk reads
 * what it returns. `jobs_queue` stays for every other reader of the queue in dispatch order.
 */
export default {
  version: 48,
  name: 'queue-by-command',
  sql: `
CREATE INDEX jobs_queue_bare ON jobs (priority, queued_at, id, run_after)
  WHERE status = 'queued' AND command IS NULL;
CREATE INDEX jobs_queue_command ON jobs (priority, queued_at, id, run_after)
  WHERE status = 'queued' AND command IS NOT NULL;
`,
};
