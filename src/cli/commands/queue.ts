/** `baton enqueue`, `baton queue list`, `baton job show|log|next|finish` and `baton cancel`. */
import { cliActor } from './lifecycle.js';
import type { Command } from 'commander';
import { jobDetail, jobLine, jobTable, jobWithProgress, runLines } from '../job-format.js';
import { jobRuns, runsWithReason, type JobRun } from '../../core/job-attempts.js';
import { jobLogName } from '../../core/job-log.js';
import { Refusal } from '../refusal.js';
import { BatonError, InvalidInputError } from '../../core/errors.js';
import { validateId } from '../../core/validate.js';
import { EXIT_CODE_BY_ERROR, Exit } from '../exit-codes.js';
import { terminalText, writeErrorLine, writeJson, type Output } from '../output.js';
import { writeOut } from '../stdio.js';
import { targetFlags, withApi } from '../run.js';
import { registerPull } from './pull.js';
import { registerJobLog } from './job-log.js';
import { registerJobPrune } from './job-prune.js';
import { hostNotes, hostsShown } from './hosts.js';
import type { CliApi } from '../remote-api.js';
import { HELD_JOB_STATES, JOB_STATES, isTerminalJobState, type Job } from '../../core/job.js';
import { shellWord } from '../../core/text.js';

interface EnqueueOptions {
  readonly priority?: string;
  readonly ramMb?: string;
  readonly command?: string;
  readonly attempts?: string;
  readonly timeLimit?: string;
}

export function registerQueue(program: Command): void {
  program
    .command('enqueue <key>')
    .description('queue a job for a task (adding the task if needed); one active job per task')
    .option('--priority <n>', 'lower runs first, 0 to 1000 (default the task priority)')
    .option('--ram-mb <mb>', 'memory the job needs, in MB: its budget (0 or left out: none)')
    .option('--command <template>', 'command to run for the job')
    .option('--attempts <n>', 'attempts before the job fails for good, 1 to 100 (default 3)')
    .option(
      '--time-limit <duration>',
      "a run past this (1s to 7d: 2h, 90m) is killed and fails 'timed out' (default: baton up's --time-limit)",
    )
    .action((key: string, options: EnqueueOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const { priority, ramMb, command, attempts, timeLimit } = options;
        const input = { key, priority, ramMb, command, attempts, timeLimit, by: cliActor() };
        const { job, created, warning } = await baton.enqueue(input);
        out.result(warning === undefined ? { created, job } : { created, job, warning }, () =>
          created
            ? `queued job ${job.id} for ${job.key} (priority ${job.priority})`
            : `${job.key} already has an active job, not queued again: ${jobLine(job)}`,
        );
        // One line on stderr (exit 0: the job is queued); --json also carries it as `warning`.
        if (warning !== undefined) writeErrorLine(`warning: ${warning}`, undefined);
      }),
    );

  registerQueueList(program);

  const job = program.command('job').description('look at one job, or work the queue yourself (pull mode)');
  job
    .command('show <id>')
    .description('show a job')
    .action((id: string, _o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const shown = await baton.getJob(id);
        const progress = (await baton.progress.ofJobs([shown])).get(shown.id);
        const runs = runsWithReason(shown, jobRuns(await baton.audit({ job: String(shown.id) }))).map((run) =>
          withLogFile(shown.id, run),
        );
        out.result({ ...jobWithProgress(shown, progress), runs }, () => [
          ...jobDetail(shown, progress),
          ...runLines(shown, runs),
        ]);
      }),
    );
  registerJobLog(job);
  registerJobPrune(job);
  registerPull(job);

  program
    .command('cancel <job-id...>')
    .description(
      'cancel queued, claimed or running jobs, each on its own; exits 3 when one had already finished ' +
        '(several ids: the highest exit code of them)',
    )
    .option('--session <id>', 'the session you act under, recorded in the ledger')
    .action((ids: string[], options: { session?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        if (ids.length > 1) return cancelEach(baton, out, ids, options.session);
        const id = ids[0] ?? '';
        const result = await baton.cancelJob(id, cliActor(options.session));
        if (!result.ok) throw alreadyEnded(id, result.job);
        out.result(result.job, () => `cancelled job ${result.job.id} (${result.job.key})`);
      }),
    );
}

function alreadyEnded(id: string, job: Job | null): Refusal {
  const message = `job ${id} is already ${job?.status ?? 'gone'}`;
  return new Refusal('conflict', 'conflict', message, 'nothing to cancel', { job });
}

/**
 * `baton cancel 10 11 12`: each job its own guarded cancel, one line per id (a refusal on stderr,
 * as alone), and the highest exit code of them: 0 when every one was cancelled.
 */
async function cancelEach(
  baton: CliApi,
  out: Output,
  ids: readonly string[],
  session?: string,
): Promise<void> {
  // Every id checked before any job is cancelled: a bad one is bad input, and nothing changed.
  for (const id of ids) validateId('job', id);
  // The session too, once: unknown or ended, it refuses the whole call in one line, as alone.
  const by = await baton.checkActor(cliActor(session), 'cancel');
  let worst = 0;
  const results: Record<string, unknown>[] = [];
  for (const id of ids) {
    try {
      const result = await baton.cancelJob(id, by);
      if (!result.ok) throw alreadyEnded(id, result.job);
      results.push({ id: Number(id), ok: true, job: result.job });
      if (!out.json) writeOut(`${terminalText(`cancelled job ${result.job.id} (${result.job.key})`)}\n`);
    } catch (error) {
      // Bad input of the whole call (the ids were checked above): said once, as alone.
      if (!(error instanceof BatonError) || error instanceof InvalidInputError) throw error;
      worst = Math.max(worst, EXIT_CODE_BY_ERROR[error.code]);
      results.push({ id: Number(id), ok: false, error: error.code, message: error.message });
      writeErrorLine(error.message, error.hint);
    }
  }
  if (out.json) writeJson(results);
  if (worst !== 0) throw new Exit(worst);
}

function registerQueueList(program: Command): void {
  program
    .command('queue')
    .description('look at the job queue')
    .command('list')
    .description('list jobs: running, claimed, queued (in queue order), then the finished newest first')
    .option('--status <status>', 'only jobs in this status (or a comma-separated list)')
    .option('--key <key>', 'only jobs for this task')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .option('--before <id>', 'only the finished jobs older than this job id, newest first (the next page)')
    .action((options: ListOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const jobs = await baton.listJobs(options);
        const progress = await baton.progress.ofJobs(jobs);
        const notes = out.json
          ? []
          : [...(await queueNotes(baton, jobs)), ...(await moreNote(baton, jobs, options, targetFlags(cmd)))];
        out.result(
          jobs.map((queued) => jobWithProgress(queued, progress.get(queued.id))),
          () => [...jobTable(jobs, progress), ...notes],
        );
      }),
    );
}

/**
 * A run with the name of its log (`logFile`) in the log folder of the `baton up` of its host: a
 * runner's agents (a pid) write one, a run taken in pull mode has none (null).
 */
function withLogFile(job: number, run: JobRun): JobRun & { logFile: string | null } {
  return { ...run, logFile: run.pid === null ? null : jobLogName({ id: job, attempt: run.attempt }) };
}

interface ListOptions {
  readonly status?: string;
  readonly key?: string;
  readonly limit?: string;
  readonly before?: string;
}

/** The command for the page after `last`: the same store or API and filters, the finished jobs older than it. */
function nextPage(options: ListOptions, last: Job, target: string[]): string {
  const flags = (['status', 'key', 'limit'] as const).flatMap((name) => {
    const value = options[name];
    return value === undefined ? [] : [`--${name} ${shellWord(value)}`];
  });
  return ['baton', ...target, 'queue list', ...flags, `--before ${last.id}`].join(' ');
}

/**
 * A last line when the list stopped at its limit: when it ended among the finished jobs (newest
 * first, by id), the exact command for the next page (`--before` the last id); otherwise the
 * counts by status say how many match (for one task's key, that the limit was reached), and
 * narrowing it, or the dashboard's Queue, shows the rest.
 */
async function moreNote(
  baton: CliApi,
  jobs: readonly Job[],
  options: ListOptions,
  target: string[],
): Promise<string[]> {
  if (jobs.length < Number(options.limit ?? 1000)) return [];
  const last = jobs.at(-1);
  if (last !== undefined && isTerminalJobState(last.status)) {
    return [`stopped at the limit, ${jobs.length} jobs; the next page: ${nextPage(options, last, target)}`];
  }
  if (options.key !== undefined) {
    return [
      `showing the first ${jobs.length} jobs of ${options.key}, the limit: there may be more; ` +
        `page through them all in the dashboard's Queue (baton up or baton serve, at /?key=${options.key})`,
    ];
  }
  const counts = (await baton.status()).jobs;
  const wanted =
    options.status === undefined ? JOB_STATES : options.status.split(',').map((name) => name.trim());
  const total = JOB_STATES.filter((state) => wanted.includes(state)).reduce(
    (sum, state) => sum + counts[state],
    0,
  );
  if (total <= jobs.length) return [];
  return [
    `showing ${jobs.length} of ${total} jobs: narrow the list with --status or --key, ` +
      "or page through them all in the dashboard's Queue (baton up or baton serve, at /)",
  ];
}

/**
 * What the table cannot say: that nothing places queued jobs while no `baton up` leads, and that
 * a job shown running is on a host whose `baton up` is gone (it waits for recovery, not its agent).
 */
async function queueNotes(baton: CliApi, jobs: readonly Job[]): Promise<string[]> {
  const active = jobs.filter((job) => (HELD_JOB_STATES as readonly string[]).includes(job.status));
  const notes: string[] = [];
  if (active.length > 0) {
    const hosts = new Set(active.map((job) => job.host));
    notes.push(...hostNotes((await hostsShown(baton)).filter((host) => hosts.has(host.name))));
  }
  if (jobs.some((job) => job.status === 'queued') && !(await baton.cluster.leader()).current) {
    notes.push('no dispatcher leader: queued jobs wait until a `baton up` runs (see `baton leader`)');
  }
  return notes;
}
