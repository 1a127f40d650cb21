/** The audit stream: the ledger newest first, filtered by task, session, host, job and kind. */
import { html } from 'hono/html';
import { AUDIT_TYPES, type AuditEntry } from '../../core/audit-event.js';
import type { Page, Query } from '../deps.js';
import { query, time, type Html, table } from '../layout.js';

const FIELDS = [
  ['key', 'Task key'],
  ['session', 'Session'],
  ['host', 'Host'],
  ['job', 'Job'],
] as const;

export function auditView(page: Page<AuditEntry>, search: Query): Html {
  const filters = {
    key: search['key'],
    session: search['session'],
    host: search['host'],
    job: search['job'],
    type: search['type'],
  };
  const kinds = AUDIT_TYPES.map(
    (kind) => html`<option value="${kind}" ${search['type'] === kind ? html`selected` : ''}>${kind}</option>`,
  );
  const inputs = FIELDS.map(
    ([name, label]) =>
      html`<label>${label}<input name="${name}" value="${search[name] ?? ''}" autocomplete="off" /></label>`,
  );
  const rows = page.items.map(
    (entry) =>
      html`<tr>
        <td>${entry.id}</td>
        <td>${time(entry.at)}</td>
        <td>${entry.type}</td>
        <td>${entry.key ?? '—'}</td>
        <td>${entry.jobId === null ? '—' : html`<a href="/jobs/${entry.jobId}">${entry.jobId}</a>`}</td>
        <td>${entry.session ?? '—'}</td>
        <td>${entry.host ?? '—'}</td>
        <td>${entry.epoch ?? '—'}</td>
        <td class="reason">${JSON.stringify(entry.detail)}</td>
      </tr>`,
  );
  const older =
    page.next === null
      ? ''
      : html`<a href="/audit${query({ ...filters, before: page.next })}">Older rows</a>`;
  return html`<form class="filters" method="get" action="/audit" aria-label="Filter the ledger">
      ${inputs}
      <label
        >Kind<select name="type">
          <option value="">any</option>
          ${kinds}
        </select></label
      >
      <button type="submit">Filter</button>
    </form>
    ${table(['Row', 'At', 'Kind', 'Task', 'Job', 'Session', 'Host', 'Epoch', 'Detail'], rows)}
    <p>${older}</p>`;
}
