/** Plain-text forms of a job, shared by the queue, job and task commands. */
import type { JobProgress } from '../coordinator/progress.js';
import type { Job, JobId } from '../core/job.js';
import type { JobRun } from '../core/job-attempts.js';
import { describeProgress } from '../core/progress.js';
import { durationWords } from '../core/time.js';
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
    ['ID', 'KEY', 'STATUS', 'HOST', 'ATTEMPT', 'JOB_EPOCH', 'PRIORITY', 'RAM_MB', 'TIME_LIMIT', 'REASON'],
    jobs.map((job) => {
      const jobProgress = progress?.get(job.id);
      const stalled = jobProgress?.stalled === true;
      return [
        String(job.id),
        job.key,
        stalled ? 'stalled' : job.status,
        cell(job.host),
        `${job.attempt}/${job.attemptMax}`,
        String(job.epoch),
        String(job.priority),
        cell(job.ramMb),
        job.timeLimitMs === null ? '-' : durationWords(job.timeLimitMs),
        stalled ? stalledReason(jobProgress) : cell(job.reason),
      ];
    }),
  );
}

function stalledReason(jobProgress: JobProgress): string {
  return `no progress since ${jobProgress.lastProgressAt === null ? '-' : iso(jobProgress.lastProgressAt)}`;
}

/** A job as JSON with its progress: `stalled`, `lastProgressAt` and the agent's counters. */
export function jobWithProgress(job: Job, progress: JobProgress | undefined): object {
  return {
    ...job,
    stalled: progress?.stalled ?? false,
    lastProgressAt: progress?.lastProgressAt ?? null,
    progress: progress?.progress ?? null,
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
    `  attempt ${job.attempt}/${job.attemptMax}  job epoch ${job.epoch}  priority ${job.priority}`,
    `  session ${cell(job.session)}  host ${cell(job.host)}  ram ${ramBudget(job)}`,
    `  command ${cell(job.command)}`,
    timeLimitLine(job),
    ...times.filter(([, at]) => at !== null).map(([what, at]) => `  ${what} ${iso(at ?? 0)}`),
    `  exit code ${cell(job.exitCode)}  reason ${cell(job.reason)}`,
    ...moreRam(job),
    ...progressLines(progress),
  ];
}

/** A duration as a flag takes it: the largest unit that gives a whole number (2h, 90m, 30s, 1500ms). */
/** The job's own time limit, and while it runs, when it times out (judged by the database clock). */
function timeLimitLine(job: Job): string {
  if (job.timeLimitMs === null)
    return "  time limit: none of its own (its runner's baton up --time-limit, if set)";
  const until =
    job.status === 'running' && job.startedAt !== null
      ? `, times out at ${iso(job.startedAt + job.timeLimitMs)}`
      : '';
  return `  time limit ${durationWords(job.timeLimitMs)}${until}`;
}

/** For a job its RAM ran out of, how to run it again with more: twice its budget, or one to choose. */
function moreRam(job: Job): string[] {
  if (job.status !== 'oom_killed') return [];
  return [
    `  to run it again with more RAM: baton retry ${job.id} --ram-mb ${job.ramMb === null ? 'MB' : job.ramMb * 2}`,
  ];
}

/** A job's RAM budget in words: none is `no budget`. */
function ramBudget(job: Job): string {
  return job.ramMb === null ? 'no budget' : `${job.ramMb} MB`;
}

function progressLines(progress: JobProgress | undefined): string[] {
  if (progress === undefined || progress.lastProgressAt === null) return [];
  const counted = progress.progress === null ? '' : describeProgress(progress.progress);
  const note = progress.progress?.note ? ` (${progress.progress.note})` : '';
  // No mark yet: the last sign of progress is the start, which the lines above already show.
  const lines =
    counted === ''
      ? ['  progress: none reported']
      : [`  last progress ${iso(progress.lastProgressAt)}${note}`, `  progress ${counted}`];
  if (progress.stalled) lines.unshift(`  STALLED: no progress since ${iso(progress.lastProgressAt)}`);
  return lines;
}

/** One line per run, and where its output is: each run writes its own log on the host that ran it. */
export function runLines(job: Job, runs: readonly JobRun[]): string[] {
  if (runs.length === 0) return [];
  const lines = runs.map((run) => {
    const pid = run.pid === null ? '' : `, agent pid ${run.pid}`;
    const code = run.exitCode === null ? '' : `, exit ${run.exitCode}`;
    const why = run.reason === null ? '' : ` — ${run.reason}`;
    const outcome = run.outcome ?? 'running';
    return `    attempt ${run.attempt} on ${cell(run.host)} at ${iso(run.placedAt)}${pid}: ${outcome}${code}${why}`;
  });
  // Only a runner's agents (a pid) write a log; a job taken in pull mode has none of Baton's.
  const spawned = runs.filter((run) => run.pid !== null);
  const hosts = [...new Set(spawned.map((run) => run.host ?? '?'))].join(', ');
  const output =
    `  output: .baton/logs/job-${job.id}-attempt-<n>.log where the \`baton up\` of ${hosts} runs; ` +
    `\`baton job log ${job.id} [--attempt <n>] [--follow]\` prints it`;
  return ['  runs:', ...lines, ...(spawned.length === 0 ? [] : [output])];
}
