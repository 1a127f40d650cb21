/**
 * The inbox: what waits for a person. Escalated tasks, oldest first (resolve one to send it back to
 * work, with a note its next run reads as BATON_FEEDBACK); tasks in review, longest waiting first
 * (approve one to done, or reject it with the reason its next run reads as BATON_FEEDBACK); tasks
 * behind a gate (approve the gate to let runs start).
 * Each button asks the API's lifecycle routes with the operator's token, as force-release does, so
 * the ledger says who decided; the CLI's `baton escalations`, `resolve`, `approve` and `reject` do
 * the same from a terminal.
 */
import { html } from 'hono/html';
import type { Task } from '../../core/task.js';
import type { InboxRows } from '../deps.js';
import { type Html, table } from '../layout.js';
import { stateSince, taskLink } from './tasks.js';

interface Ctx {
  readonly apiBase: string;
  readonly now: number;
}

const target = (apiBase: string, task: Task, verb: string): string =>
  `${apiBase}/v1/tasks/${encodeURIComponent(task.key)}/${verb}`;

/** The task's key links to its page (views/tasks.ts), and its url, if any, to where it lives. */
function taskCell(task: Task): Html {
  const url =
    task.url === null ? '' : html` <a href="${task.url}" aria-label="${task.key} at its source">&nearr;</a>`;
  return html`<th scope="row">
    ${taskLink(task.key)}${url}${task.title === '' ? '' : html`<br /><span>${task.title}</span>`}
  </th>`;
}

const since = (task: Task, ctx: Ctx): Html => stateSince(task, ctx.now);

/** Who moved it there: a job links to its page. */
function by(task: Task): Html {
  const job = /^job (\d+)$/.exec(task.stateBy ?? '');
  if (job !== null) return html`<a href="/jobs/${job[1]}">${task.stateBy}</a>`;
  return html`${task.stateBy ?? '—'}`;
}

function escalatedRow(task: Task, ctx: Ctx, index: number): Html {
  return html`<tr>
    ${taskCell(task)}
    <td>${since(task, ctx)}</td>
    <td>${by(task)}</td>
    <td class="reason">${task.stateReason ?? ''}</td>
    <td>${resolveForm(task, ctx.apiBase, index)}</td>
  </tr>`;
}

function reviewRow(task: Task, ctx: Ctx, index: number): Html {
  return html`<tr>
    ${taskCell(task)}
    <td>${since(task, ctx)}</td>
    <td>${by(task)}</td>
    <td class="reason">${task.feedbackFrom === 'review' ? task.feedback : ''}</td>
    <td>${reviewForms(task, ctx.apiBase, index)}</td>
  </tr>`;
}

function gatedRow(task: Task, ctx: Ctx, index: number): Html {
  return html`<tr>
    ${taskCell(task)}
    <td>${task.gate ?? ''}</td>
    <td>${task.priority}</td>
    <td>${gateForm(task, ctx.apiBase, index)}</td>
  </tr>`;
}

function resolveForm(task: Task, apiBase: string, index: number | string): Html {
  return html`<form
    hx-post="${target(apiBase, task, 'resolve')}"
    hx-swap="none"
    data-action="resolve ${task.key}"
  >
    <label for="resolve-${index}">Note</label>
    <input id="resolve-${index}" name="reason" maxlength="500" autocomplete="off" />
    <button type="submit">Resolve ${task.key}</button>
  </form>`;
}

function reviewForms(task: Task, apiBase: string, index: number | string): Html {
  return html`<form
      hx-post="${target(apiBase, task, 'approve')}"
      hx-swap="none"
      data-action="approve ${task.key}"
    >
      <input type="hidden" name="gate" value="review" />
      <label for="approve-${index}">Note</label>
      <input id="approve-${index}" name="note" maxlength="500" autocomplete="off" />
      <button type="submit">Approve ${task.key}</button>
    </form>
    <form hx-post="${target(apiBase, task, 'reject')}" hx-swap="none" data-action="reject ${task.key}">
      <label for="reject-${index}">Why</label>
      <input id="reject-${index}" name="reason" required maxlength="500" autocomplete="off" />
      <button type="submit">Reject ${task.key}</button>
    </form>`;
}

function gateForm(task: Task, apiBase: string, index: number | string): Html {
  const gate = task.gate ?? '';
  return html`<form
    hx-post="${target(apiBase, task, 'approve')}"
    hx-swap="none"
    data-action="approve ${task.key} (${gate})"
  >
    <input type="hidden" name="gate" value="${gate}" />
    <label for="gate-${index}">Note</label>
    <input id="gate-${index}" name="note" maxlength="500" autocomplete="off" />
    <button type="submit">Open the ${gate} gate of ${task.key}</button>
  </form>`;
}

/**
 * The inbox's buttons for one task, as its state takes them (resolve an escalation, approve or
 * reject a review, open a gate), or null when a person has nothing to decide: the task page's.
 */
export function taskActions(task: Task, apiBase: string): Html | null {
  if (task.state === 'escalated') return resolveForm(task, apiBase, 'task');
  if (task.state === 'in_review') return reviewForms(task, apiBase, 'task');
  if (task.state === 'open' && task.gate !== null) return gateForm(task, apiBase, 'task');
  return null;
}

function section(title: string, tasks: readonly Task[], shown: number, rows: () => Html): Html {
  const count = tasks.length === shown ? `${shown} shown; more wait` : `${tasks.length}`;
  return html`<section aria-labelledby="inbox-${title.replace(/\W+/g, '-')}">
    <h3 id="inbox-${title.replace(/\W+/g, '-')}">${title} (${count})</h3>
    ${tasks.length === 0 ? html`<p class="muted">None.</p>` : rows()}
  </section>`;
}

export function inboxView(inbox: InboxRows, apiBase: string): Html {
  const ctx: Ctx = { apiBase, now: inbox.now };
  const { escalated, review, gated, shown } = inbox;
  if (escalated.length + review.length + gated.length === 0)
    return html`<p>Nothing waits for a person: no escalation, no task in review, no task behind a gate.</p>`;
  return html`${section('Escalated', escalated, shown, () =>
    table(
      ['Task', 'Escalated', 'By', 'Reason', 'Resolve'],
      escalated.map((task, index) => escalatedRow(task, ctx, index)),
      html`Oldest first; resolving sends a task back to open, to be queued again (by auto-enqueue when it is
      on), and its note reaches the next run as BATON_FEEDBACK`,
    ),
  )}
  ${section('In review', review, shown, () =>
    table(
      ['Task', 'In review since', 'By', 'Last rejection', 'Decide'],
      review.map((task, index) => reviewRow(task, ctx, index)),
      html`Longest waiting first; a rejection's reason reaches the next run as BATON_FEEDBACK`,
    ),
  )}
  ${section('Behind a gate', gated, shown, () =>
    table(
      ['Task', 'Gate', 'Priority', 'Approve'],
      gated.map((task, index) => gatedRow(task, ctx, index)),
      html`No run starts until its gate is opened`,
    ),
  )}`;
}
