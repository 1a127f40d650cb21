/**
 * A job's runs, one per placement, read back from its ledger rows: where each ran, its agent's pid
 * and how it ended. The job row keeps only its latest run, so without this a job that was
 * requeued after its agent was killed showed `attempt 2/3` and nothing about the first.
 */
import type { AuditEntry } from './audit-event.js';
import type { Job } from './job.js';

export interface JobRun {
  /** The attempt number it ran as (a run given back on a graceful stop shares its number). */
  readonly attempt: number;
  readonly host: string | null;
  readonly placedAt: number;
  readonly pid: number | null;
  /** requeued, done, failed, oom_killed, cancelled, escalated; null while it runs. */
  readonly outcome: string | null;
  readonly reason: string | null;
  readonly exitCode: number | null;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const whole = (value: unknown): number | null => (typeof value === 'number' ? value : null);

type Step = (run: JobRun, detail: AuditEntry['detail']) => JobRun;

const ENDINGS: Readonly<Partial<Record<AuditEntry['type'], Step>>> = {
  'job:spawned': (run, detail) => ({ ...run, pid: whole(detail['pid']) }),
  'job:requeued': (run, detail) => ({ ...run, outcome: 'requeued', reason: text(detail['reason']) }),
  'job:finished': (run, detail) => ({
    ...run,
    outcome: text(detail['status']),
    exitCode: whole(detail['exitCode']),
    reason: text(detail['reason']),
  }),
  'job:cancelled': (run, detail) => ({ ...run, outcome: 'cancelled', reason: text(detail['reason']) }),
};

/** The runs of one job from its ledger rows, oldest first. */
export function jobRuns(entries: readonly AuditEntry[]): JobRun[] {
  const runs: JobRun[] = [];
  for (const entry of entries) {
    const attempt = whole(entry.detail['attempt']);
    const placement = entry.type === 'job:placed' || (entry.type === 'job:claimed' && attempt !== null);
    if (placement && attempt !== null) {
      const host = text(entry.detail['host']) ?? entry.host;
      runs.push({
        attempt,
        host,
        placedAt: entry.at,
        pid: null,
        outcome: null,
        reason: null,
        exitCode: null,
      });
      continue;
    }
    const step = ENDINGS[entry.type];
    const last = runs.length - 1;
    const run = runs[last];
    if (step === undefined || run === undefined || run.outcome !== null) continue;
    runs[last] = step(run, entry.detail);
  }
  return runs;
}

/** The job's last run learns the reason its ledger row does not carry: the job row's. */
export function runsWithReason(
  job: Pick<Job, 'status' | 'reason' | 'exitCode'>,
  runs: readonly JobRun[],
): JobRun[] {
  return runs.map((run, index) =>
    index === runs.length - 1 && run.outcome === job.status && run.reason === null
      ? { ...run, reason: job.reason, exitCode: run.exitCode ?? job.exitCode }
      : run,
  );
}
