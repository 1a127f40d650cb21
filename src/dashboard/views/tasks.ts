/**
 * Tasks: the backlog, newest first by keyset (store observe.tasksPage, one read a page), with each
 * task's state and since when, its gate, the tasks it still waits for, its active job and its live
 * claim's holder. The filters are the form's own query parameters: state (the active ones by
 * default: open, in review, escalated), label, project and "blocked only".
 */
import { html } from 'hono/html';
import { TASK_STATES, type Task } from '../../core/task.js';
import type { Query, TaskPageRow, TaskRows } from '../deps.js';
import { age, query, time, type Html, table } from '../layout.js';

/** A task's page: its key, escaped for the path (keys hold `/` and `#`: github:acme/api#1246). */
const taskHref = (key: string): string => `/tasks/${encodeURIComponent(key)}`;

/** A task key as a link to its page. */
export const taskLink = (key: string): Html => html`<a href="${taskHref(key)}">${key}</a>`;

/** When it reached its state, and how long ago on the database's clock. */
export function stateSince(task: Task, now: number): Html {
  return html`${time(task.stateAt)}<br /><span class="muted"
      >${age(Math.max(0, now - task.stateAt))} ago</span
    >`;
}

function row(item: TaskPageRow, now: number): Html {
  const { task, blockers, job } = item;
  const url = task.url === null ? '' : html`<br /><a href="${task.url}" class="muted">${task.url}</a>`;
  const blocked = blockers.map((key, index) => html`${index === 0 ? '' : ', '}${taskLink(key)}`);
  const labels = task.labels.join(', ');
  return html`<tr>
    <th scope="row">${taskLink(task.key)}${url}</th>
    <td>${task.title}</td>
    <td>${task.state}<br />${stateSince(task, now)}</td>
    <td>${task.gate ?? '—'}</td>
    <td>${blockers.length === 0 ? '—' : blocked}</td>
    <td>${job === null ? '—' : html`<a href="/jobs/${job.id}">job ${job.id}</a> ${job.status}`}</td>
    <td>${task.holder === null ? '—' : `session ${task.holder.session}`}</td>
    <td>${labels === '' ? '—' : labels}${task.project === null ? '' : html`<br />${task.project}`}</td>
  </tr>`;
}

const COLUMNS = [
  'Task',
  'Title',
  'State, since',
  'Gate',
  'Waits for',
  'Active job',
  'Claimed by',
  'Labels, project',
];

function stateOptions(chosen: string | undefined): Html[] {
  const choices: [string, string][] = [
    ['active', 'active (open, in review, escalated)'],
    ...TASK_STATES.map((state): [string, string] => [state, state]),
    ['any', 'any'],
  ];
  return choices.map(
    ([value, label]) =>
      html`<option value="${value}" ${(chosen ?? 'active') === value ? html`selected` : ''}>
        ${label}
      </option>`,
  );
}

export function tasksView(page: TaskRows, search: Query): Html {
  const filters = {
    state: search['state'],
    label: search['label'],
    project: search['project'],
    blocked: search['blocked'],
    limit: search['limit'],
  };
  const blockedOnly = filters.blocked !== undefined && filters.blocked !== '' && filters.blocked !== '0';
  const older =
    page.next === null
      ? ''
      : html`<a href="/tasks${query({ ...filters, before: page.next })}">Older tasks</a>`;
  const newest =
    search['before'] === undefined ? '' : html`<a href="/tasks${query(filters)}">Newest tasks</a>`;
  return html`<form class="filters" method="get" action="/tasks" aria-label="Filter tasks">
      <label
        >State<select name="state">
          ${stateOptions(filters.state)}
        </select></label
      >
      <label>Label<input name="label" value="${filters.label ?? ''}" autocomplete="off" /></label>
      <label>Project<input name="project" value="${filters.project ?? ''}" autocomplete="off" /></label>
      <label
        ><input type="checkbox" name="blocked" value="1" ${blockedOnly ? html`checked` : ''} /> Blocked
        only</label
      >
      <button type="submit">Filter</button>
    </form>
    ${table(
      COLUMNS,
      page.items.map((item) => row(item, page.now)),
      html`Newest first; ${page.items.length} shown; "waits for" names the dependencies not yet done`,
    )}
    <p>${newest} ${older}</p>`;
}
