/** Plain-text forms of a job, shared by the queue, job and task commands. */
import type { Job } from '../core/job.js';
import { cell, iso, table } from './output.js';

export function jobLine(job: Job): string {
  const where = job.host === null ? '' : ` on ${job.host}`;
  const why = job.reason === null ? '' : ` — ${job.reason}`;
  const attempt = `attempt ${job.attempt}/${job.attemptMax}`;
  return `job ${job.id} ${job.status}${where}, ${attempt}, priority ${job.priority}${why}`;
}

export function jobTable(jobs: readonly Job[]): string[] {
  if (jobs.length === 0) return ['no jobs'];
  return table(
    ['ID', 'KEY', 'STATUS', 'HOST', 'ATTEMPT', 'EPOCH', 'PRIORITY', 'RAM_MB', 'REASON'],
    jobs.map((j) => [
      String(j.id),
      j.key,
      j.status,
      cell(j.host),
      `${j.attempt}/${j.attemptMax}`,
      String(j.epoch),
      String(j.priority),
      cell(j.ramMb),
      cell(j.reason),
    ]),
  );
}

export function jobDetail(job: Job): string[] {
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
  ];
}
