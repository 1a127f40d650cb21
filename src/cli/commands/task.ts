/** `baton task add | list | show` (and depend | undepend, task-deps.ts). */
import type { Command } from 'commander';
import type { TaskDetail } from '../../coordinator/coordinator.js';
import type { Effect } from '../../core/effect.js';
import type { TaskEvent } from '../../core/task.js';
import type { ListedTask } from '../../store/task-list.js';
import { cliActor, stateLine } from './lifecycle.js';
import { cell, describeHolder, iso, table } from '../output.js';
import { collect, targetFlags, withApi } from '../run.js';
import { jobLine } from '../job-format.js';
import { shellWord } from '../../core/text.js';
import { registerTaskSet } from './workspace.js';
import { dependencyLines, registerTaskDeps } from './task-deps.js';

interface AddOptions {
  readonly title?: string;
  readonly priority?: string;
  readonly project?: string;
  readonly assignee?: string;
  readonly label?: string[];
  readonly requiresFilesystem?: boolean;
  readonly workspace?: string;
  readonly body?: string;
  readonly url?: string;
  readonly review?: string;
  readonly after?: string[];
}

export function registerTask(program: Command): void {
  const task = program.command('task').description('add, list and show tasks');

  task
    .command('add <key>')
    .description('add a task with a stable key, such as github:acme/api#1246')
    .option('--title <text>', 'one-line title')
    .option('--priority <n>', 'lower runs first, 0 to 1000 (default 100)')
    .option('--project <name>', 'project the task belongs to')
    .option('--assignee <name>', 'who should work on it')
    .option('--label <name>', 'a label; repeat for more', collect)
    .option('--requires-filesystem', 'the task changes files: its runs lock a workspace exclusively')
    .option('--workspace <name>', 'the workspace its runs must lock, whatever the agent')
    .option('--body <text>', 'the longer description (with the title, what the vague-issue rule reads)')
    .option('--url <url>', 'where the task lives, such as its issue page')
    .option('--review <mode>', 'required: a successful run leaves it in review, not done (default none)')
    .option(
      '--after <key>',
      'a task it waits for: none of its jobs runs before that one is done; repeat',
      collect,
    )
    .action((key: string, options: AddOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const after = options.after ?? [];
        const ws = baton.workspaces;
        const { task: added, requirements } = await ws.addTask({
          key,
          title: options.title,
          priority: options.priority,
          project: options.project,
          assignee: options.assignee,
          labels: options.label,
          requiresFilesystem: options.requiresFilesystem,
          workspace: options.workspace,
          body: options.body,
          url: options.url,
          review: options.review,
          // The edges are added in the add's own step: an unknown key or a cycle adds nothing.
          after: options.after,
          by: cliActor(),
        });
        const { requiresFilesystem, workspace } = requirements;
        const bounced = added.state === 'escalated' ? `, escalated: ${added.stateReason ?? ''}` : '';
        const links = after.length === 0 ? null : (await baton.showTask(added.key)).dependencies;
        const waits = after.length === 0 ? '' : `, waits for ${after.join(', ')}`;
        const line = `added ${added.key} (priority ${added.priority}${bounced}${waits})`;
        const dependencies = links === null ? {} : { dependencies: links };
        out.result({ ...added, requiresFilesystem, workspace, ...dependencies }, () => line);
      }),
    );

  registerTaskList(task);

  task
    .command('show <key>')
    .description('show a task: its state and their history, its holder, recent jobs and pull requests')
    .action((key: string, _o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const detail = await baton.showTask(key);
        // `state` at the top as well: scripts read `task show --json | jq .state`.
        out.result({ key: detail.task.key, state: detail.task.state, ...detail }, () => showLines(detail));
      }),
    );

  registerTaskSet(task);
  registerTaskDeps(task);
}

interface ListOptions {
  readonly project?: string;
  readonly assignee?: string;
  readonly state?: string;
  readonly label?: string;
  readonly gated?: true;
  readonly blocked?: true;
  readonly after?: string;
  readonly limit?: string;
}

/** `baton task list`: a label no task has exits 4 naming the known ones, as `next --label` does. */
function registerTaskList(task: Command): void {
  task
    .command('list')
    .description('list tasks by priority, then key')
    .option('--project <name>', 'only this project')
    .option('--assignee <name>', 'only this assignee')
    .option('--state <state>', 'only tasks in this state: open, in_review, done, closed or escalated')
    .option('--label <name>', 'only tasks with this label; exits 4 for a label no task has')
    .option(
      '--gated',
      'only open tasks waiting behind a gate (open it with `baton approve <key> --gate <gate>`)',
    )
    .option('--blocked', 'only tasks waiting for a task that is not done (see `baton task show <key>`)')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .option('--after <key>', 'only the tasks after this one, by priority then key (the next page)')
    .action((options: ListOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const tasks = await baton.listTasks(options);
        const next = nextPageLine(tasks, options, targetFlags(cmd));
        out.result(tasks, () => [...taskTable(tasks), ...next]);
      }),
    );
}

/**
 * When the list stopped at its limit, the exact command for the next page: the same store or API,
 * the same filters, `--after` its last key (docs/decisions/0045). Printed whenever the page is
 * full, so a list of exactly the limit gets one more, empty, page (no count is read to know).
 */
function nextPageLine(tasks: readonly ListedTask[], options: ListOptions, target: string[]): string[] {
  const last = tasks.at(-1);
  if (last === undefined || tasks.length < Number(options.limit ?? 1000)) return [];
  const flags = (['project', 'assignee', 'state', 'label', 'limit'] as const).flatMap((name) => {
    const value = options[name];
    return value === undefined ? [] : [`--${name} ${shellWord(value)}`];
  });
  const switches = (['gated', 'blocked'] as const).flatMap((name) => (options[name] ? [`--${name}`] : []));
  const command = ['baton', ...target, 'task list', ...flags, ...switches, `--after ${shellWord(last.key)}`];
  return [`stopped at the limit, ${tasks.length} tasks; the next page: ${command.join(' ')}`];
}

/** The WAITS_FOR column (the tasks not done it waits for) only when a listed task waits for one. */
function taskTable(tasks: readonly ListedTask[]): string[] {
  if (tasks.length === 0) return ['no tasks'];
  const waits = tasks.some((task) => task.waitsFor.length > 0);
  return table(
    ['KEY', 'STATE', 'PRIORITY', 'PROJECT', 'ASSIGNEE', 'HOLDER', ...(waits ? ['WAITS_FOR'] : []), 'TITLE'],
    tasks.map((task) => [
      task.key,
      task.gate === null ? task.state : `${task.state} (${task.gate} gate)`,
      String(task.priority),
      cell(task.project),
      cell(task.assignee),
      task.holder === null ? '-' : `session ${task.holder.session}`,
      ...(waits ? [task.waitsFor.length === 0 ? '-' : task.waitsFor.join(',')] : []),
      cell(task.title),
    ]),
  );
}

function showLines({ task, holder, jobs, moreJobs, history, prs, dependencies }: TaskDetail): string[] {
  const more = ` (the first ${jobs.length}; all of them: \`baton queue list --key ${task.key}\`)`;
  return [
    task.title === '' ? task.key : `${task.key}  ${task.title}`,
    `  ${stateLine(task, true)}`,
    ...(task.url === null ? [] : [`  url ${task.url}`]),
    `  priority ${task.priority}  project ${cell(task.project)}  assignee ${cell(task.assignee)}`,
    `  labels ${task.labels.length === 0 ? '-' : task.labels.join(', ')}` +
      `  review ${task.reviewRequired ? 'required' : 'none'}`,
    ...(task.feedback === null
      ? []
      : [`  feedback for the next run (${task.feedbackFrom}): ${task.feedback}`]),
    `  created ${iso(task.createdAt)}  claim epoch ${task.epoch}`,
    holder === null ? '  not claimed' : `  claimed by ${describeHolder(holder)}`,
    ...dependencyLines(dependencies),
    jobs.length === 0 ? '  no jobs' : `  jobs${moreJobs ? more : ''}:`,
    ...jobs.map((job) => `    ${jobLine(job)}`),
    ...(prs.length === 0 ? [] : ['  pull requests:', ...prs.map((effect) => `    ${prLine(effect)}`)]),
    ...(history.length === 0 ? [] : ['  history:', ...history.map((event) => `    ${historyLine(event)}`)]),
  ];
}

function historyLine(event: TaskEvent): string {
  const by = event.by === null ? '' : ` by ${event.by}`;
  const why = event.reason === null ? '' : `: ${event.reason}`;
  if (event.type === 'task:gated') return `${iso(event.at)}  waits for ${event.gate ?? '?'} approval${by}`;
  if (event.type === 'task:approved') return `${iso(event.at)}  ${event.gate ?? '?'} approved${by}${why}`;
  if (event.type === 'task:depended') return `${iso(event.at)}  waits for ${event.on ?? '?'}${by}`;
  if (event.type === 'task:undepended')
    return `${iso(event.at)}  no longer waits for ${event.on ?? '?'}${by}`;
  return `${iso(event.at)}  ${event.from ?? '?'} → ${event.to ?? '?'} (${event.action ?? '?'})${by}${why}`;
}

function prLine(effect: Effect): string {
  const payload = effect.payload as { url?: unknown } | null;
  const url = typeof payload?.url === 'string' ? payload.url : JSON.stringify(effect.payload);
  return `${url}  (session ${effect.session}, epoch ${effect.epoch}, ${iso(effect.recordedAt)})`;
}
