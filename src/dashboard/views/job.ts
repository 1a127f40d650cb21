/**
 * Job detail: command, attempts, outcome, exit code, its ledger rows and the tail of its output.
 * The runner writes a job's output to `<logDir>/job-<id>-attempt-<n>.log` on the host that runs
 * it (daemon/agent-process.ts) and keeps the last lines in the database only for a failed run.
 * So the live tail shows when this process can read that folder (`baton up` serving its own
 * host); otherwise the page says where the output is.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { html } from 'hono/html';
import type { AuditEntry } from '../../core/audit-event.js';
import type { Job } from '../../core/job.js';
import { time, type Html, table } from '../layout.js';

const TAIL_BYTES = 16_384;

/** The last bytes of a file, or null when this process cannot read it. */
function readTail(path: string, bytes = TAIL_BYTES): string | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

export interface Output {
  readonly text: string | null;
  /** Where it came from, or why there is none. */
  readonly note: string;
}

export function jobOutput(job: Job, logDir: string | undefined): Output {
  if (job.attempt === 0) return { text: null, note: 'not started yet' };
  if (logDir !== undefined) {
    const path = join(logDir, `job-${job.id}-attempt-${job.attempt}.log`);
    const text = readTail(path);
    if (text !== null) return { text, note: `from ${path}` };
  }
  if (job.outputTail !== null) return { text: job.outputTail, note: 'the last lines kept in the database' };
  return {
    text: null,
    note: `the output is on ${job.host ?? 'the runner'}'s disk (its log folder), which this process cannot read`,
  };
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
    <h3 id="output-h">Output${live ? ' (live)' : ''}</h3>
    <p class="muted">${out.note}</p>
    ${out.text === null ? '' : tail(job, out.text)}
  </section>`;
}

export function jobView(job: Job, history: readonly AuditEntry[], out: Output): Html {
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
      <dd>${job.key}</dd>
      <dt>Command</dt>
      <dd class="reason">${job.command ?? '—'}</dd>
      <dt>Status</dt>
      <dd>
        ${job.status}${job.reason === null ? '' : html` &mdash; <span class="reason">${job.reason}</span>`}
      </dd>
      <dt>Attempt</dt>
      <dd>${job.attempt} of ${job.attemptMax} (epoch ${job.epoch})</dd>
      <dt>Host</dt>
      <dd>${job.host ?? '—'}${job.pid === null ? '' : `, agent pid ${job.pid}`}</dd>
      <dt>Exit code</dt>
      <dd>${job.exitCode ?? '—'}</dd>
      <dt>Queued, started, finished</dt>
      <dd>${time(job.queuedAt)}, ${time(job.startedAt)}, ${time(job.finishedAt)}</dd>
    </dl>
    ${outputView(job, out)}
    <h3>Ledger</h3>
    ${table(['Row', 'At', 'Kind', 'Epoch', 'Session', 'Host', 'Detail'], rows)}`;
}
