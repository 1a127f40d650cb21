/**
 * The session report (docs/architecture.md#session-report, `baton report sessions`): per session,
 * its kind, host and pid, when it started and how it ended, the issues it worked with their epochs
 * and outcomes, its jobs and attempts, time held and escalations. Filtered by host and time window.
 */
import { html } from 'hono/html';
import type { IssueWorked, SessionReport } from '../../core/session-report.js';
import type { Query } from '../deps.js';
import { age, query, time, type Html, table } from '../layout.js';

const FIELDS = [
  ['host', 'Host', 'text'],
  ['since', 'Since (ISO)', 'text'],
  ['until', 'Until (ISO)', 'text'],
] as const;

function worked(issues: readonly IssueWorked[]): Html {
  if (issues.length === 0) return html`<span class="muted">none</span>`;
  const items = issues.map(
    (i) =>
      html`<li>
        <a href="/audit${query({ key: i.key })}">${i.key}</a> epoch ${i.epoch}: ${i.outcome ?? 'held'}
      </li>`,
  );
  return html`<ul class="plain">
    ${items}
  </ul>`;
}

const COLUMNS = [
  'Session',
  'Kind',
  'Host',
  'Pid',
  'Started',
  'Ended',
  'End',
  'Issues worked',
  'Jobs / attempts',
  'Held',
  'Escalations',
];

export function sessionsView(report: readonly SessionReport[], q: Query): Html {
  const inputs = FIELDS.map(
    ([name, label, type]) =>
      html`<label
        >${label}<input name="${name}" type="${type}" value="${q[name] ?? ''}" autocomplete="off"
      /></label>`,
  );
  const rows = report.map(
    (s) =>
      html`<tr>
        <td><a href="/audit${query({ session: s.session })}">${s.session}</a></td>
        <td>${s.kind}${s.name === null ? '' : ` (${s.name})`}</td>
        <td>${s.host}</td>
        <td>${s.pid}</td>
        <td>${time(s.startedAt)}</td>
        <td>${time(s.endedAt)}</td>
        <td>${s.end}</td>
        <td>${worked(s.issuesWorked)}</td>
        <td>${s.jobs} / ${s.attempts}</td>
        <td>${age(s.heldMs)}</td>
        <td>${s.escalations}</td>
      </tr>`,
  );
  const empty = report.length === 0 ? html`<p class="muted">No session matches.</p>` : '';
  return html`<form class="filters" method="get" action="/sessions" aria-label="Filter the sessions">
      ${inputs}
      <button type="submit">Filter</button>
    </form>
    ${table(COLUMNS, rows, html`Newest first; export with <code>baton report sessions --csv</code>`)} ${empty}`;
}
