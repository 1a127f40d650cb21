/** Queue: jobs newest first by keyset, with status, host, attempt, time limit and why a job waits. */
import { html } from 'hono/html';
import { JOB_STATES, type Job } from '../../core/job.js';
import { durationWords } from '../../core/time.js';
import type { Page, Query } from '../deps.js';
import { query, time, type Html, table } from '../layout.js';
import { taskLink } from './tasks.js';

function row(job: Job): Html {
  const waits = job.status === 'queued' && job.reason !== null;
  return html`<tr>
    <td><a href="/jobs/${job.id}">${job.id}</a></td>
    <td>${taskLink(job.key)}</td>
    <td>${job.status}</td>
    <td>${job.host ?? '—'}</td>
    <td>${job.attempt}/${job.attemptMax}</td>
    <td>${job.ramMb === null ? '—' : `${job.ramMb} MB`}</td>
    <td>${limitCell(job.timeLimitMs)}</td>
    <td>${time(job.queuedAt)}</td>
    <td class="reason">${waits ? job.reason : job.status === 'queued' ? '' : (job.reason ?? '')}</td>
  </tr>`;
}

/** The job's own time limit, as `queue list` shows it (`2h`); none of its own: its runner's, if any. */
function limitCell(limitMs: number | null | undefined): string {
  return limitMs === undefined || limitMs === null ? '—' : durationWords(limitMs); // an older server sends none
}

const COLUMNS = ['Job', 'Task', 'Status', 'Host', 'Attempt', 'RAM', 'Time limit', 'Queued', 'Reason'];

export function queueView(page: Page<Job>, search: Query): Html {
  const statuses = JOB_STATES.map(
    (status) =>
      html`<option value="${status}" ${search['status'] === status ? html`selected` : ''}>${status}</option>`,
  );
  const filters = {
    status: search['status'],
    host: search['host'],
    key: search['key'],
    limit: search['limit'],
  };
  const older =
    page.next === null ? '' : html`<a href="/${query({ ...filters, before: page.next })}">Older jobs</a>`;
  const newest = search['before'] === undefined ? '' : html`<a href="/${query(filters)}">Newest jobs</a>`;
  return html`<form class="filters" method="get" action="/" aria-label="Filter jobs">
      <label
        >Status<select name="status">
          <option value="">any</option>
          ${statuses}
        </select></label
      >
      <label>Host<input name="host" value="${search['host'] ?? ''}" autocomplete="off" /></label>
      <label>Task key<input name="key" value="${search['key'] ?? ''}" autocomplete="off" /></label>
      <button type="submit">Filter</button>
    </form>
    ${table(COLUMNS, page.items.map(row), html`Newest first; ${page.items.length} shown`)}
    <p>${newest} ${older}</p>`;
}
