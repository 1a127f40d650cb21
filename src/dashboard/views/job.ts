/**
 * Job detail: command, every run, outcome, exit code, its ledger rows and the output of each run.
 * The runner writes a run's output to `<logDir>/job-<id>-attempt-<n>.log` on the host that runs
 * it (daemon/agent-process.ts), and copies it into the database as it runs (the output stream,
 * docs/decisions/0029). So the live tail shows from the file when this process can read that
 * folder (`baton up` serving its own host), else from the stream; else the page says where it is.
 * The job row keeps only its latest run, so the runs come from the ledger (core/job-attempts.ts),
 * as `baton job show` lists them, and each earlier attempt's log is shown too, collapsed: a failed
 * first run stays readable after a retry.
 */
import { join } from 'node:path';
import { html } from 'hono/html';
import type { AuditEntry } from '../../core/audit-event.js';
import { jobRuns, runsWithReason, type JobRun } from '../../core/job-attempts.js';
import { elsewhereNote, jobLogName, logNotBefore } from '../../core/job-log.js';
import type { Job } from '../../core/job.js';
import { logHost, readLogTail } from '../../os/log-file.js';
import { time, type Html, table } from '../layout.js';
import type { DashboardReads, JobTaskLinks, TaskLinkRow } from '../deps.js';
import { taskLink } from './tasks.js';

const TAIL_BYTES = 16_384;

export interface Output {
  readonly text: string | null;
  /** Where it came from, or why there is none. */
  readonly note: string;
}

/** The last bytes of an attempt's log file, from `logDir`, or null when this process cannot read it. */
function fileTail(logDir: string | undefined, job: Job, attempt: number): Output | null {
  if (logDir === undefined) return null;
  const path = join(logDir, jobLogName({ id: job.id, attempt }));
  const text = readLogTail(path, TAIL_BYTES, logNotBefore(job, attempt));
  return text === null ? null : { text, note: `from ${path}` };
}

/**
 * The output the job page shows of the job's latest attempt: its log file's tail where this process
 * can read it, else the output stream's (a run on another host, docs/decisions/0029), else the
 * database's kept tail of a failed run, else a note saying where the output is.
 */
export async function jobOutput(
  job: Job,
  logDir: string | undefined,
  streamTail: DashboardReads['streamTail'],
): Promise<Output> {
  if (job.attempt === 0) return { text: null, note: 'not started yet' };
  // A file here of a run now on another host is dead (its run was given back, and rerun there).
  const theirs = logDir !== undefined && job.host !== null && (logHost(logDir) ?? job.host) !== job.host;
  const file = theirs ? null : fileTail(logDir, job, job.attempt);
  if (file !== null) return file;
  const streamed = await streamTail(job.id, job.attempt, TAIL_BYTES);
  if (streamed !== null) {
    const host = job.host ?? 'its host';
    const whole = `the whole log is ${jobLogName(job)} on ${host}'s disk`;
    return { text: streamed, note: `streamed from ${host} through the database (its last lines; ${whole})` };
  }
  if (job.outputTail !== null) return { text: job.outputTail, note: 'the last lines kept in the database' };
  return { text: null, note: elsewhereNote(job, [], job.attempt) };
}

/** An earlier attempt's output: only its log file keeps it (the database keeps the latest run's). */
function attemptOutput(job: Job, run: JobRun, runs: readonly JobRun[], logDir: string | undefined): Output {
  return fileTail(logDir, job, run.attempt) ?? { text: null, note: elsewhereNote(job, runs, run.attempt) };
}

function runLine(run: JobRun): Html {
  return html`<tr>
    <td>${run.attempt}</td>
    <td>${run.host ?? '—'}</td>
    <td>${time(run.placedAt)}</td>
    <td>${run.pid ?? '—'}</td>
    <td>${run.outcome ?? 'running'}</td>
    <td>${run.exitCode ?? '—'}</td>
    <td class="reason">${run.reason ?? '—'}</td>
  </tr>`;
}

/**
 * Every run of the job, and each earlier attempt's output in a collapsed section that keeps its
 * state across the page's live reloads (an ended attempt's log no longer changes). Runs given back
 * on a graceful stop share their attempt's number and its log, which is shown once, with the last.
 */
function runsView(job: Job, runs: readonly JobRun[], logDir: string | undefined, hidden?: Output): Html {
  if (runs.length === 0) return html``;
  const earlier = runs.filter(
    (run, index) => run.attempt < job.attempt && runs[index + 1]?.attempt !== run.attempt,
  );
  const logs = earlier.map((run) => {
    const out = hidden ?? attemptOutput(job, run, runs, logDir);
    const how = `${run.outcome ?? 'running'}${run.reason === null ? '' : ` — ${run.reason}`}`;
    return html`<details class="attempt" id="attempt-${run.attempt}" hx-preserve="true">
      <summary>Output of attempt ${run.attempt} on ${run.host ?? '?'}: ${how}</summary>
      <p class="muted">${out.note}</p>
      ${
        out.text === null
          ? ''
          : html`<pre class="tail" tabindex="0" aria-label="Output of attempt ${run.attempt}">
${out.text}</pre>`
      }
    </details>`;
  });
  return html`<section id="runs" aria-labelledby="runs-h">
    <h3 id="runs-h">Runs</h3>
    ${table(['Attempt', 'Host', 'Placed', 'Agent pid', 'Outcome', 'Exit', 'Reason'], runs.map(runLine))}
    ${logs}
  </section>`;
}

const tail = (job: Job, text: string): Html =>
  html`<pre class="tail" tabindex="0" aria-label="Output of job ${job.id}">${text}</pre>`;

export function outputView(job: Job, out: Output): Html {
  const live = job.status === 'running' || job.status === 'claimed';
  return html`<section
    id="output"
    aria-labelledby="output-h"
    ${live ? html`hx-get="/ui/frag/output/${job.id}" hx-trigger="every 2s" hx-swap="outerHTML"` : ''}
  >
    <h3 id="output-h">
      Output${job.attempt > 1 ? ` of attempt ${job.attempt}` : ''}${live ? ' (live)' : ''}
    </h3>
    <p class="muted">${out.note}</p>
    ${out.text === null ? '' : tail(job, out.text)}
  </section>`;
}

/** The job page's output: the latest run's, where the logs are, and what earlier attempts say instead if hidden. */
interface JobOutputs {
  readonly output: Output;
  readonly logDir: string | undefined;
  /** What every earlier attempt's output section says instead, for a reader who may not read it. */
  readonly earlier?: Output | undefined;
}

/** The task's dependencies as `dl` rows (none when it has none): a queued job waits while one is not done. */
function dependencyRows(links: JobTaskLinks): Html {
  const list = (rows: readonly TaskLinkRow[]): Html =>
    html`${rows.map((row, index) => html`${index === 0 ? '' : ', '}${taskLink(row.key)} (${row.state})`)}`;
  return html`${
    links.waitsFor.length === 0
      ? ''
      : html`<dt>Task waits for</dt>
          <dd>${list(links.waitsFor)}</dd>`
  }${
    links.waitedBy.length === 0
      ? ''
      : html`<dt>Waited for by</dt>
          <dd>${list(links.waitedBy)}</dd>`
  }`;
}

export function jobView(
  job: Job,
  history: readonly AuditEntry[],
  links: JobTaskLinks,
  outputs: JobOutputs,
): Html {
  const { output: out, logDir, earlier: hidden } = outputs;
  const runs = runsWithReason(job, jobRuns(history));
  const rows = history.map(
    (entry) =>
      html`<tr>
        <td>${entry.id}</td>
        <td>${time(entry.at)}</td>
        <td>${entry.type}</td>
        <td>${entry.epoch ?? '—'}</td>
        <td>${entry.session ?? '—'}</td>
        <td>${entry.host ?? '—'}</td>
        <td class="reason">${JSON.stringify(entry.detail)}</td>
      </tr>`,
  );
  return html`<dl>
      <dt>Task</dt>
      <dd>${taskLink(job.key)}</dd>
      ${dependencyRows(links)}
      <dt>Command</dt>
      <dd class="reason">${job.command ?? '—'}</dd>
      <dt>Status</dt>
      <dd>
        ${job.status}${job.reason === null ? '' : html` &mdash; <span class="reason">${job.reason}</span>`}
      </dd>
      <dt>Attempt</dt>
      <dd>${job.attempt} of ${job.attemptMax} (job epoch ${job.epoch})</dd>
      <dt>Host</dt>
      <dd>${job.host ?? '—'}${job.pid === null ? '' : `, agent pid ${job.pid}`}</dd>
      <dt>Time limit</dt>
      <dd>${limitText(job)}</dd>
      <dt>Exit code</dt>
      <dd>${job.exitCode ?? '—'}</dd>
      <dt>Queued, started, finished</dt>
      <dd>${time(job.queuedAt)}, ${time(job.startedAt)}, ${time(job.finishedAt)}</dd>
    </dl>
    ${runsView(job, runs, logDir, hidden)} ${outputView(job, out)}
    <h3>Ledger</h3>
    ${table(['Row', 'At', 'Kind', 'Epoch', 'Session', 'Host', 'Detail'], rows)}`;
}

/** The job's own time limit, and when a running one times out (its runner's limit, if any, is not known here). */
function limitText(job: Job): string {
  const limitMs = job.timeLimitMs ?? null; // an older server sends none
  if (limitMs === null) return "none of its own (its runner's baton up --time-limit, if set)";
  const until =
    job.status === 'running' && job.startedAt !== null
      ? `, times out at ${time(job.startedAt + limitMs)}`
      : '';
  return `${limitMs / 1000} s${until}`;
}

/** What a job page says of its output to a token that may not read it (an agent's, of another job). */
export const OUTPUT_HIDDEN: Output = {
  text: null,
  note: "not shown: this token may read only its own job's output (`job:log`)",
};
