/**
 * Claims with lock forensics: who holds each live claim (session, kind, host, pid), its epoch,
 * since when, how old its last heartbeat is (late ones marked in words, not colour alone), its
 * job and the agent's memory against the budget, and what a force-release would do, with the
 * button that asks the API for it.
 */
import { html } from 'hono/html';
import { describePid } from '../../core/session-report.js';
import type { ClaimRow } from '../deps.js';
import { age, time, type Html, table } from '../layout.js';
import { taskLink } from './tasks.js';

export interface ClaimsContext {
  readonly apiBase: string;
  readonly rss: (pid: number, host: string | null) => string;
}

function memory(row: ClaimRow, ctx: ClaimsContext): Html {
  const job = row.job;
  if (job === null) return html`<span class="muted">no job</span>`;
  const budget = job.ramMb === null ? 'no budget' : `budget ${job.ramMb} MB`;
  const rss = job.pid === null ? 'not started' : ctx.rss(job.pid, job.host);
  return html`<a href="/jobs/${job.id}">job ${job.id}</a> (${job.status}, attempt ${job.attempt})<br />
    RSS ${rss}; ${budget}`;
}

function card(row: ClaimRow, ctx: ClaimsContext, index: number): Html {
  const target = `${ctx.apiBase}/v1/claims/${encodeURIComponent(row.key)}/force-release`;
  const late = row.late
    ? html`<span class="late">${age(row.heartbeatAgeMs)} &mdash; late</span>`
    : html`<span class="ok">${age(row.heartbeatAgeMs)}</span>`;
  return html`<tr>
    <th scope="row">${taskLink(row.key)}</th>
    <td>
      session ${row.session}${row.name === null ? '' : ` (${row.name})`}<br />${row.kind} on ${row.host}, pid
      ${describePid({ pid: row.pid, agentPid: row.job?.agentSession === row.session ? row.job.pid : null })}
    </td>
    <td>${row.epoch}</td>
    <td>${time(row.claimedAt)}</td>
    <td>${late}${row.ttlMs === null ? '' : html`<br /><span class="muted">TTL ${age(row.ttlMs)}</span>`}</td>
    <td>
      ${memory(row, ctx)}${row.locks.map((lock) => html`<br />workspace ${lock.workspace} (lock epoch ${lock.epoch})`)}
    </td>
    <td>
      <ol class="plan" aria-label="What a force-release of ${row.key} would do">
        ${row.forceRelease.map((step) => html`<li>${step}</li>`)}
      </ol>
      <form hx-post="${target}" hx-swap="none" data-action="force-release ${row.key}">
        <label for="reason-${index}">Reason</label>
        <input id="reason-${index}" name="reason" required maxlength="500" autocomplete="off" />
        <button type="submit" class="force-release">Force-release ${row.key}</button>
      </form>
    </td>
  </tr>`;
}

export function claimsView(claims: readonly ClaimRow[], ctx: ClaimsContext): Html {
  if (claims.length === 0) return html`<p>No live claims.</p>`;
  return table(
    ['Task', 'Holder', 'Claim epoch', 'Since', 'Heartbeat age', 'Job and memory', 'Force-release'],
    claims.map((claim, index) => card(claim, ctx, index)),
    html`${claims.length} live, oldest heartbeat first`,
  );
}
