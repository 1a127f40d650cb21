/**
 * The session report (docs/architecture.md#session-report, `baton report sessions`): per session,
 * its kind, host and pid (an agent's own, once spawned), when it started and how it ended (stopped,
 * died, rescued, fenced), the issues it worked with their epochs and how each run or claim ended,
 * its jobs and attempts, time held and escalations. Filtered by host and time window.
 */
import { html } from 'hono/html';
import {
  describeEnd,
  describePid,
  describeWorked,
  type IssueWorked,
  type SessionReport,
} from '../../core/session-report.js';
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
    (issue) =>
      html`<li>
        <a href="/audit${query({ key: issue.key })}">${issue.key}</a> epoch ${issue.epoch}:
        ${describeWorked(issue)}
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

export function sessionsView(reports: readonly SessionReport[], search: Query): Html {
  const inputs = FIELDS.map(
    ([name, label, type]) =>
      html`<label
        >${label}<input name="${name}" type="${type}" value="${search[name] ?? ''}" autocomplete="off"
      /></label>`,
  );
  const rows = reports.map(
    (report) =>
      html`<tr>
        <td><a href="/audit${query({ session: report.session })}">${report.session}</a></td>
        <td>${report.kind}${report.name === null ? '' : ` (${report.name})`}</td>
        <td>${report.host}</td>
        <td>${describePid(report)}</td>
        <td>${time(report.startedAt)}</td>
        <td>${time(report.endedAt)}</td>
        <td>${describeEnd(report)}</td>
        <td>${worked(report.issuesWorked)}</td>
        <td>${report.jobs} / ${report.attempts}</td>
        <td>${age(report.heldMs)}</td>
        <td>${report.escalations}</td>
      </tr>`,
  );
  const empty = reports.length === 0 ? html`<p class="muted">No session matches.</p>` : '';
  return html`<form class="filters" method="get" action="/sessions" aria-label="Filter the sessions">
      ${inputs}
      <button type="submit">Filter</button>
    </form>
    ${table(COLUMNS, rows, html`Newest first; export with <code>baton report sessions --csv</code>`)} ${empty}`;
}
