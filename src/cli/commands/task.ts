/** `baton task add | list | show`. */
import type { Command } from 'commander';
import type { TaskDetail } from '../../coordinator/coordinator.js';
import type { Task } from '../../core/task.js';
import { cell, describeHolder, iso, table } from '../output.js';
import { collect, withCoordinator } from '../run.js';
import { jobLine } from '../job-format.js';
import { withWorkspaces } from '../workspace-run.js';
import { registerTaskSet } from './workspace.js';

interface AddOptions {
  readonly title?: string;
  readonly priority?: string;
  readonly project?: string;
  readonly assignee?: string;
  readonly label?: string[];
  readonly requiresFilesystem?: boolean;
  readonly workspace?: string;
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
    .action((key: string, o: AddOptions, cmd: Command) =>
      withWorkspaces(cmd, async (ws, out) => {
        const { task: added, requirements } = await ws.addTask({
          key,
          title: o.title,
          priority: o.priority,
          project: o.project,
          assignee: o.assignee,
          labels: o.label,
          requiresFilesystem: o.requiresFilesystem,
          workspace: o.workspace,
        });
        const { requiresFilesystem, workspace } = requirements;
        const line = `added ${added.key} (priority ${added.priority})`;
        out.result({ ...added, requiresFilesystem, workspace }, () => line);
      }),
    );

  task
    .command('list')
    .description('list tasks by priority, then key')
    .option('--project <name>', 'only this project')
    .option('--assignee <name>', 'only this assignee')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .action((o: { project?: string; assignee?: string; limit?: string }, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const tasks = await baton.listTasks(o);
        out.result(tasks, () => taskTable(tasks));
      }),
    );

  task
    .command('show <key>')
    .description('show a task with its live claim holder and recent jobs')
    .action((key: string, _o: unknown, cmd: Command) =>
      withCoordinator(cmd, async (baton, out) => {
        const detail = await baton.showTask(key);
        out.result(detail, () => showLines(detail));
      }),
    );

  registerTaskSet(task);
}

function taskTable(tasks: readonly Task[]): string[] {
  if (tasks.length === 0) return ['no tasks'];
  return table(
    ['KEY', 'PRIORITY', 'PROJECT', 'ASSIGNEE', 'HOLDER', 'TITLE'],
    tasks.map((t) => [
      t.key,
      String(t.priority),
      cell(t.project),
      cell(t.assignee),
      t.holder === null ? '-' : `session ${t.holder.session}`,
      cell(t.title),
    ]),
  );
}

function showLines({ task, holder, jobs }: TaskDetail): string[] {
  return [
    task.title === '' ? task.key : `${task.key}  ${task.title}`,
    `  priority ${task.priority}  project ${cell(task.project)}  assignee ${cell(task.assignee)}`,
    `  labels ${task.labels.length === 0 ? '-' : task.labels.join(', ')}`,
    `  created ${iso(task.createdAt)}  epoch ${task.epoch}`,
    holder === null ? '  not claimed' : `  claimed by ${describeHolder(holder)}`,
    jobs.length === 0 ? '  no jobs' : '  jobs:',
    ...jobs.map((job) => `    ${jobLine(job)}`),
  ];
}
