/** Workspaces: each one's lock, its holder, and the runs waiting for it. */
import { html } from 'hono/html';
import type { WorkspaceRow } from '../deps.js';
import { time, type Html, table } from '../layout.js';

function row(w: WorkspaceRow): Html {
  const lock =
    w.lock === null
      ? html`<span class="muted">free</span>`
      : html`held since ${time(w.lock.acquiredAt)}, lock epoch ${w.lock.epoch}`;
  const holder =
    w.lock === null
      ? '—'
      : html`session
        ${w.lock.session}${w.holder === null ? '' : ` on ${w.holder.host}, pid ${w.holder.pid}`}${
          w.lock.jobId === null ? '' : html`, <a href="/jobs/${w.lock.jobId}">job ${w.lock.jobId}</a>`
        }`;
  const waiting =
    w.waiting.length === 0
      ? '—'
      : w.waiting.map((j) => html`<a href="/jobs/${j.id}">${j.id}</a> (${j.key}) `);
  return html`<tr>
    <th scope="row">${w.workspace.name}</th>
    <td>${w.workspace.kind}</td>
    <td class="reason">${w.workspace.path}</td>
    <td>${lock}</td>
    <td>${holder}</td>
    <td>${waiting}</td>
  </tr>`;
}

export function workspacesView(rows: readonly WorkspaceRow[]): Html {
  if (rows.length === 0) return html`<p>No workspace registered (\`baton workspace add\`).</p>`;
  return table(['Workspace', 'Kind', 'Path', 'Lock', 'Holder', 'Waiting runs'], rows.map(row));
}
