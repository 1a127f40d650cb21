/** Leader (who leads, its term and lease, recent term changes) and Hosts (capacity, toggle). */
import { html } from 'hono/html';
import { ramAvailableMb } from '../../core/capacity.js';
import { hostFlag } from '../../core/host-liveness.js';
import { durationWords } from '../../core/time.js';
import type { HostRow, LeaderRow } from '../deps.js';
import { age, time, type Html, table } from '../layout.js';

export function leaderView(leader: LeaderRow): Html {
  const who = leader.current
    ? html`<dl>
        <dt>Session</dt>
        <dd>${leader.session ?? '—'}</dd>
        <dt>Host</dt>
        <dd>${leader.host ?? '—'}${leader.pid === null ? '' : `, pid ${leader.pid}`}</dd>
        <dt>Term</dt>
        <dd>${leader.term ?? '—'}</dd>
        <dt>Lease expires</dt>
        <dd>
          ${time(leader.expiresAt)}${
            leader.expiresInMs === null ? '' : ` (in ${age(Math.max(0, leader.expiresInMs))})`
          }
        </dd>
      </dl>`
    : html`<p class="late">
        Nobody leads now${leader.term === null ? '' : ` (last term ${leader.term})`}: start \`baton up\`.
      </p>`;
  const changes = leader.changes.map(
    (entry) =>
      html`<tr>
        <td>${entry.epoch ?? '—'}</td>
        <td>${time(entry.at)}</td>
        <td>${typeof entry.detail['holder'] === 'string' ? entry.detail['holder'] : '—'}</td>
      </tr>`,
  );
  return html`${who}
    <h3>Recent term changes</h3>
    ${
      leader.changes.length === 0
        ? html`<p class="muted">None recorded.</p>`
        : table(['Term', 'At', 'Holder (session)'], changes)
    }`;
}

/** The host's last report, and whether its `baton up` still serves it, as `baton hosts` says it. */
function lastReport(host: HostRow): Html {
  const ago = `${age(host.lastReportAgeMs)} ago`;
  if (host.liveness === 'live') return html`${ago}`;
  return html`<span class="late">${ago} &mdash; ${host.liveness}</span>`;
}

/**
 * The operator's button: Disable or Enable. None for a host its `baton up` drains: enabling it is
 * refused (409) until that process has stopped, and it is disabled already.
 */
function operatorCell(host: HostRow, apiBase: string): Html {
  if (hostFlag(host) === 'draining') return html`<td>draining: enable it once its baton up has stopped</td>`;
  const action = host.enabled ? 'disable' : 'enable';
  const target = `${apiBase}/v1/hosts/${encodeURIComponent(host.name)}/${action}`;
  return html`<td>
    <button hx-post="${target}" hx-swap="none" data-action="${action} ${host.name}">
      ${host.enabled ? 'Disable' : 'Enable'} ${host.name}
    </button>
  </td>`;
}

/** As `baton hosts`' AGENT_CMD: null is a host not registered since decision 0047, taken as able. */
function agentCommandWords(agentCommand: boolean | null | undefined): string {
  if (agentCommand === undefined || agentCommand === null) return 'not reported (taken as yes)';
  return agentCommand ? 'yes' : 'no: they wait for another host';
}

function hostRow(host: HostRow, apiBase: string): Html {
  const free = ramAvailableMb(host);
  return html`<tr>
    <th scope="row">${host.name}</th>
    <td>${hostFlag(host) === 'standby' ? 'warm standby' : hostFlag(host)}</td>
    <td>${host.ramTotalMb} MB</td>
    <td>${host.ramReservedMb} MB</td>
    <td>${host.ramFreeMb} MB (${free} MB for new jobs)</td>
    <td>${host.jobsActive}/${host.slotsMax}</td>
    <td>
      ${host.timeLimitMs === undefined || host.timeLimitMs === null ? '—' : durationWords(host.timeLimitMs)}
    </td>
    <td>${agentCommandWords(host.agentCommand)}</td>
    <td>
      ${host.running.length === 0 ? '—' : host.running.map((job) => html`<a href="/jobs/${job.id}">${job.id}</a> `)}
    </td>
    <td>${lastReport(host)}</td>
    ${operatorCell(host, apiBase)}
  </tr>`;
}

/** Each host judged on the database's clock against its runner's TTL (core/host-liveness.ts). */
export function hostsView(hosts: readonly HostRow[], apiBase: string): Html {
  if (hosts.length === 0) return html`<p>No host has registered: run \`baton up\`.</p>`;
  return table(
    [
      'Host',
      'State',
      'RAM budget',
      'Reserved',
      'Free on the machine (for new jobs)',
      'Slots used',
      'Time limit (jobs without their own)',
      'Agent command (jobs without their own)',
      'Running jobs',
      'Last report',
      'Operator',
    ],
    hosts.map((host) => hostRow(host, apiBase)),
  );
}
