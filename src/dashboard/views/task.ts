/**
 * One task's page: what `baton task show` prints (Coordinator.showTask): its state and since when,
 * gate, review requirement, labels, url and creation; its live claim (holder and claim epoch); what
 * it waits for and what waits for it; its jobs; the pull requests its runs recorded; its history of
 * states, gates and dependencies. Where a person has something to decide (an escalation, a review, a gate), the
 * inbox's buttons are here too (views/inbox.ts), calling the API with the operator's token.
 */
import { html } from 'hono/html';
import type { Effect } from '../../core/effect.js';
import type { Job } from '../../core/job.js';
import type { Task, TaskEvent } from '../../core/task.js';
import type { TaskLinkRow, TaskStory } from '../deps.js';
import { time, type Html, table } from '../layout.js';
import { taskActions } from './inbox.js';
import { stateSince, taskLink } from './tasks.js';

function links(rows: readonly TaskLinkRow[]): Html {
  if (rows.length === 0) return html`none`;
  return html`${rows.map((row, index) => html`${index === 0 ? '' : ', '}${taskLink(row.key)} (${row.state})`)}`;
}

function change(event: TaskEvent): string {
  if (event.type === 'task:gated') return `waits for ${event.gate ?? '?'} approval`;
  if (event.type === 'task:approved') return `${event.gate ?? '?'} approved`;
  if (event.type === 'task:depended') return `waits for ${event.on ?? '?'}`;
  if (event.type === 'task:undepended') return `no longer waits for ${event.on ?? '?'}`;
  return `${event.from ?? '?'} \u2192 ${event.to ?? '?'} (${event.action ?? '?'})`;
}

const historyRow = (event: TaskEvent): Html =>
  html`<tr>
    <td>${time(event.at)}</td>
    <td>${change(event)}</td>
    <td>${event.by ?? '—'}${event.session === null ? '' : ` (session ${event.session})`}</td>
    <td class="reason">${event.reason ?? ''}</td>
  </tr>`;

const jobRow = (job: Job): Html =>
  html`<tr>
    <td><a href="/jobs/${job.id}">${job.id}</a></td>
    <td>${job.status}</td>
    <td>${job.attempt}/${job.attemptMax}</td>
    <td>${job.host ?? '—'}</td>
    <td>${time(job.queuedAt)}</td>
    <td class="reason">${job.reason ?? ''}</td>
  </tr>`;

function prRow(effect: Effect): Html {
  const payload = effect.payload as { url?: unknown } | null;
  const url = typeof payload?.url === 'string' ? payload.url : null;
  return html`<tr>
    <td>${url === null ? JSON.stringify(effect.payload) : html`<a href="${url}">${url}</a>`}</td>
    <td>${effect.session}</td>
    <td>${effect.epoch}</td>
    <td>${time(effect.recordedAt)}</td>
  </tr>`;
}

function stateFacts(task: Task, now: number): Html {
  return html`<dt>State</dt>
    <dd>
      ${task.state} since ${stateSince(task, now)}${task.stateBy === null ? '' : html`, by ${task.stateBy}`}
      ${task.stateReason === null ? '' : html`&mdash; <span class="reason">${task.stateReason}</span>`}
    </dd>
    <dt>Gate</dt>
    <dd>${task.gate === null ? 'none' : `${task.gate} (no run starts until it is approved)`}</dd>
    <dt>Review</dt>
    <dd>${task.reviewRequired ? 'required: a successful run leaves it in review' : 'none'}</dd>
    ${
      task.feedback === null
        ? ''
        : html`<dt>Feedback for the next run</dt>
            <dd>from ${task.feedbackFrom ?? ''}: <span class="reason">${task.feedback}</span></dd>`
    }`;
}

function claimFact(story: TaskStory): Html {
  const { holder, task } = story;
  if (holder === null) return html`not claimed (claim epoch ${task.epoch}, the newest granted)`;
  return html`session ${holder.session} on ${holder.host} since ${time(holder.since)}, claim epoch
  ${holder.epoch}`;
}

export function taskView(story: TaskStory, apiBase: string): Html {
  const { task, dependencies, jobs, moreJobs, prs, history, now } = story;
  const actions = taskActions(task, apiBase);
  return html`<dl>
      <dt>Title</dt>
      <dd>${task.title === '' ? '—' : task.title}</dd>
      ${stateFacts(task, now)}
      <dt>Labels, project, priority</dt>
      <dd>
        ${task.labels.length === 0 ? '—' : task.labels.join(', ')}; ${task.project ?? '—'}; ${task.priority}
      </dd>
      <dt>URL</dt>
      <dd>${task.url === null ? '—' : html`<a href="${task.url}">${task.url}</a>`}</dd>
      <dt>Created</dt>
      <dd>${time(task.createdAt)}</dd>
      <dt>Claim</dt>
      <dd>${claimFact(story)}</dd>
      <dt>Waits for</dt>
      <dd>${links(dependencies.waitsFor)}</dd>
      <dt>Waited for by</dt>
      <dd>${links(dependencies.waitedBy)}</dd>
    </dl>
    ${
      actions === null
        ? ''
        : html`<section aria-labelledby="decide-h">
            <h3 id="decide-h">Decide</h3>
            ${actions}
            <p class="muted">The <a href="/inbox">inbox</a> lists every task that waits for a person.</p>
          </section>`
    }
    <h3>Jobs</h3>
    ${
      jobs.length === 0
        ? html`<p class="muted">No jobs.</p>`
        : table(
            ['Job', 'Status', 'Attempt', 'Host', 'Queued', 'Reason'],
            jobs.map(jobRow),
            html`Active first`,
          )
    }
    ${
      moreJobs
        ? html`<p class="muted">
            The first ${jobs.length} shown:
            <a href="/?key=${encodeURIComponent(task.key)}">all of its jobs in the Queue</a>.
          </p>`
        : ''
    }
    <h3>Pull requests</h3>
    ${
      prs.length === 0
        ? html`<p class="muted">None recorded.</p>`
        : table(['Pull request', 'Session', 'Claim epoch', 'Recorded'], prs.map(prRow))
    }
    <h3>History</h3>
    ${
      history.length === 0
        ? html`<p class="muted">No state changes yet.</p>`
        : table(['At', 'Change', 'By', 'Reason'], history.map(historyRow), html`Oldest first`)
    }`;
}
