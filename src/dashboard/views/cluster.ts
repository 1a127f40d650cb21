/** Leader (who leads, its term and lease, recent term changes) and Hosts (capacity, toggle). */
import { html } from 'hono/html';
import { ramAvailableMb } from '../../core/capacity.js';
import type { HostRow, LeaderRow } from '../deps.js';
import { age, time, type Html, table } from '../layout.js';

export function leaderView(l: LeaderRow, now: number): Html {
  const who = l.current
    ? html`<dl>
        <dt>Session</dt>
        <dd>${l.session ?? '—'}</dd>
        <dt>Host</dt>
        <dd>${l.host ?? '—'}${l.pid === null ? '' : `, pid ${l.pid}`}</dd>
        <dt>Term</dt>
        <dd>${l.term ?? '—'}</dd>
        <dt>Lease expires</dt>
        <dd>
          ${time(l.expiresAt)}${l.expiresAt === null ? '' : ` (in ${age(Math.max(0, l.expiresAt - now))})`}
        </dd>
      </dl>`
    : html`<p class="late">
        Nobody leads now${l.term === null ? '' : ` (last term ${l.term})`}: start \`baton up\`.
      </p>`;
  const changes = l.changes.map(
    (e) =>
      html`<tr>
        <td>${e.epoch ?? '—'}</td>
        <td>${time(e.at)}</td>
        <td>${typeof e.detail['holder'] === 'string' ? e.detail['holder'] : '—'}</td>
      </tr>`,
  );
  return html`${who}
    <h3>Recent term changes</h3>
    ${
      l.changes.length === 0
        ? html`<p class="muted">None recorded.</p>`
        : table(['Term', 'At', 'Holder (session)'], changes)
    }`;
}

function hostRow(h: HostRow, apiBase: string, now: number, staleAfterMs: number): Html {
  const free = ramAvailableMb(h);
  const silent = now - h.heartbeatAt;
  const action = h.enabled ? 'disable' : 'enable';
  const target = `${apiBase}/v1/hosts/${encodeURIComponent(h.name)}/${action}`;
  return html`<tr>
    <th scope="row">${h.name}</th>
    <td>${h.enabled ? 'enabled' : 'warm standby'}</td>
    <td>${h.ramTotalMb} MB</td>
    <td>${h.ramReservedMb} MB</td>
    <td>${h.ramFreeMb} MB (${free} MB for new jobs)</td>
    <td>${h.jobsActive}/${h.slotsMax}</td>
    <td>
      ${h.running.length === 0 ? '—' : h.running.map((j) => html`<a href="/jobs/${j.id}">${j.id}</a> `)}
    </td>
    <td>
      ${silent > staleAfterMs ? html`<span class="late">${age(silent)} ago — silent</span>` : `${age(silent)} ago`}
    </td>
    <td>
      <button hx-post="${target}" hx-swap="none" data-action="${action} ${h.name}">
        ${h.enabled ? 'Disable' : 'Enable'} ${h.name}
      </button>
    </td>
  </tr>`;
}

export function hostsView(hosts: readonly HostRow[], apiBase: string, now: number): Html {
  if (hosts.length === 0) return html`<p>No host has registered: run \`baton up\`.</p>`;
  return table(
    [
      'Host',
      'State',
      'RAM total',
      'Reserved',
      'Free',
      'Slots used',
      'Running jobs',
      'Last report',
      'Operator',
    ],
    hosts.map((h) => hostRow(h, apiBase, now, 10_000)),
  );
}
