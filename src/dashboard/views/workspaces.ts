/** Workspaces: each one's lock, its holder, and the runs waiting for it. */
import { html } from 'hono/html';
import type { WorkspaceRow } from '../deps.js';
import { time, type Html, table } from '../layout.js';

function row(entry: WorkspaceRow): Html {
  const lock =
    entry.lock === null
      ? html`<span class="muted">free</span>`
      : html`held since ${time(entry.lock.acquiredAt)}, lock epoch ${entry.lock.epoch}`;
  const holder =
    entry.lock === null
      ? '—'
      : html`session
        ${entry.lock.session}${entry.holder === null ? '' : ` on ${entry.holder.host}, pid ${entry.holder.pid}`}${
          entry.lock.jobId === null
            ? ''
            : html`, <a href="/jobs/${entry.lock.jobId}">job ${entry.lock.jobId}</a>`
        }`;
  const waiting =
    entry.waiting.length === 0
      ? '—'
      : entry.waiting.map((job) => html`<a href="/jobs/${job.id}">${job.id}</a> (${job.key}) `);
  return html`<tr>
    <th scope="row">${entry.workspace.name}</th>
    <td>${entry.workspace.kind}</td>
    <td class="reason">${entry.workspace.path}</td>
    <td>${lock}</td>
    <td>${holder}</td>
    <td>${waiting}</td>
  </tr>`;
}

export function workspacesView(rows: readonly WorkspaceRow[]): Html {
  if (rows.length === 0) return html`<p>No workspace registered (\`baton workspace add\`).</p>`;
  return table(['Workspace', 'Kind', 'Path', 'Lock', 'Holder', 'Waiting runs'], rows.map(row));
}
