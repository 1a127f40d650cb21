/** Plain-text forms of a job, shared by the queue, job and task commands. */
import type { JobProgress } from '../coordinator/progress.js';
import type { Job, JobId } from '../core/job.js';
import { describeProgress } from '../core/progress.js';
import { cell, iso, table } from './output.js';

export function jobLine(job: Job): string {
  const where = job.host === null ? '' : ` on ${job.host}`;
  const why = job.reason === null ? '' : ` — ${job.reason}`;
  const attempt = `attempt ${job.attempt}/${job.attemptMax}`;
  return `job ${job.id} ${job.status}${where}, ${attempt}, priority ${job.priority}${why}`;
}

/** A running job with no progress mark for the stall threshold shows as `stalled`, with its last progress. */
export function jobTable(jobs: readonly Job[], progress?: ReadonlyMap<JobId, JobProgress>): string[] {
  if (jobs.length === 0) return ['no jobs'];
  return table(
    ['ID', 'KEY', 'STATUS', 'HOST', 'ATTEMPT', 'EPOCH', 'PRIORITY', 'RAM_MB', 'REASON'],
    jobs.map((j) => {
      const p = progress?.get(j.id);
      const stalled = p?.stalled === true;
      return [
        String(j.id),
        j.key,
        stalled ? 'stalled' : j.status,
        cell(j.host),
        `${j.attempt}/${j.attemptMax}`,
        String(j.epoch),
        String(j.priority),
        cell(j.ramMb),
        stalled ? stalledReason(p) : cell(j.reason),
      ];
    }),
  );
}

function stalledReason(p: JobProgress): string {
  return `no progress since ${p.lastProgressAt === null ? '-' : iso(p.lastProgressAt)}`;
}

/** A job as JSON with its progress: `stalled`, `lastProgressAt` and the agent's counters. */
export function jobWithProgress(job: Job, p: JobProgress | undefined): object {
  return {
    ...job,
    stalled: p?.stalled ?? false,
    lastProgressAt: p?.lastProgressAt ?? null,
    progress: p?.progress ?? null,
  };
}

export function jobDetail(job: Job, progress?: JobProgress): string[] {
  const times: [string, number | null][] = [
    ['queued', job.queuedAt],
    ['claimed', job.claimedAt],
    ['started', job.startedAt],
    ['finished', job.finishedAt],
  ];
  return [
    `job ${job.id} for ${job.key}: ${job.status}`,
    `  attempt ${job.attempt}/${job.attemptMax}  epoch ${job.epoch}  priority ${job.priority}`,
    `  session ${cell(job.session)}  host ${cell(job.host)}  ram ${cell(job.ramMb)} MB`,
    `  command ${cell(job.command)}`,
    ...times.filter(([, at]) => at !== null).map(([what, at]) => `  ${what} ${iso(at ?? 0)}`),
    `  exit code ${cell(job.exitCode)}  reason ${cell(job.reason)}`,
    ...progressLines(progress),
  ];
}

function progressLines(p: JobProgress | undefined): string[] {
  if (p === undefined || p.lastProgressAt === null) return [];
  const lines = [
    `  last progress ${iso(p.lastProgressAt)}${p.progress?.note ? ` (${p.progress.note})` : ''}`,
    `  progress ${p.progress === null ? 'no marks' : describeProgress(p.progress)}`,
  ];
  if (p.stalled) lines.unshift(`  STALLED: no progress since ${iso(p.lastProgressAt)}`);
  return lines;
}
