/** `baton workspace add | list`, `baton agent add | list`, `baton project add | list`. */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { withApi } from '../run.js';
import { isCodingRole } from '../../core/workspace-plan.js';
import { cell, table } from '../output.js';
import { cliActor } from './lifecycle.js';
import type { Task } from '../../core/task.js';
import { parseTaskAdd } from '../../coordinator/inputs.js';

export function registerWorkspace(program: Command): void {
  const workspace = program.command('workspace').description('register and list workspaces');
  workspace
    .command('add <name>')
    .description('register a directory that coding runs lock exclusively')
    .requiredOption('--path <dir>', 'the directory; a relative path is taken from the current one')
    .option('--kind <kind>', 'dir (use it as is) or worktree (a git worktree per claim); default dir')
    .action((name: string, options: { path: string; kind?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const added = await ws.addWorkspace({
          name,
          // resolve('') is the current directory: an empty --path goes to the coordinator as given, refused there.
          path: options.path.trim() === '' ? options.path : resolve(options.path),
          kind: options.kind,
          by: cliActor(),
        });
        out.result(added, () => `added workspace ${added.name} (${added.kind}) at ${added.path}`);
      }),
    );
  workspace
    .command('list')
    .description('list workspaces by name')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const all = await ws.listWorkspaces();
        const rows = all.map((entry) => [entry.name, entry.kind, entry.path]);
        out.result(all, () => (all.length === 0 ? 'no workspaces' : table(['NAME', 'KIND', 'PATH'], rows)));
      }),
    );
  registerAgent(program);
  registerProject(program);
}

/** `baton agent add|list`. */
function registerAgent(program: Command): void {
  const agentCommand = program.command('agent').description('register and list agents');
  agentCommand
    .command('add <name>')
    .description('register an agent; a coding role or the engineering department locks its workspace')
    .requiredOption('--role <role>', 'such as cto, engineer, writer')
    .option('--department <name>', 'such as engineering, finance')
    .option('--workspace <name>', "the agent's own workspace")
    .action(
      (name: string, options: { role: string; department?: string; workspace?: string }, cmd: Command) =>
        withApi(cmd, async (baton, out) => {
          const ws = baton.workspaces;
          const added = await ws.addAgent({ name, ...options });
          out.result(
            added,
            () => `added agent ${added.name} (${added.role}), workspace ${cell(added.workspace)}`,
          );
        }),
    );
  agentCommand
    .command('list')
    .description('list agents by name')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const all = await ws.listAgents();
        const rows = all.map((agent) => [
          agent.name,
          agent.role,
          cell(agent.department),
          cell(agent.workspace),
          isCodingRole(agent) ? 'yes' : 'no',
        ]);
        out.result(all, () =>
          all.length === 0 ? 'no agents' : table(['NAME', 'ROLE', 'DEPARTMENT', 'WORKSPACE', 'CODING'], rows),
        );
      }),
    );
}

/** `baton project add|list`. */
function registerProject(program: Command): void {
  const project = program.command('project').description('register and list projects');
  project
    .command('add <name>')
    .description('register a project; its primary workspace serves coding runs whose agent has none')
    .option('--primary-workspace <name>', "the project's primary workspace")
    .action((name: string, options: { primaryWorkspace?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const added = await ws.addProject({ name, primaryWorkspace: options.primaryWorkspace });
        out.result(
          added,
          () => `added project ${added.name}, primary workspace ${cell(added.primaryWorkspace)}`,
        );
      }),
    );
  project
    .command('list')
    .description('list projects by name')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const all = await ws.listProjects();
        const rows = all.map((entry) => [entry.name, cell(entry.primaryWorkspace)]);
        out.result(all, () =>
          all.length === 0 ? 'no projects' : table(['NAME', 'PRIMARY_WORKSPACE'], rows),
        );
      }),
    );
}

/** `baton task set <key>`: a task's filesystem requirement and workspace binding (under `task`). */
interface TaskSetOptions {
  readonly requiresFilesystem?: boolean;
  readonly workspace?: string | false;
  readonly title?: string;
  readonly body?: string;
  readonly url?: string;
  readonly review?: string;
}

export function registerTaskSet(task: Command): void {
  task
    .command('set <key>')
    .description("change a task's fields, filesystem requirement or workspace; without options, show them")
    .option('--requires-filesystem', 'its runs change files and lock a workspace exclusively')
    .option('--no-requires-filesystem', 'its runs are cognitive (unless the agent has a coding role)')
    .option('--workspace <name>', 'the workspace its runs must lock, whatever the agent')
    .option('--no-workspace', 'remove the explicit workspace')
    .option('--title <text>', 'a new title')
    .option('--body <text>', 'a new body')
    .option('--url <url>', 'where the task lives')
    .option('--review <mode>', 'required or none: whether a successful run waits in review')
    .action((key: string, options: TaskSetOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const { title, body, url, review } = options;
        const fields = { title, body, url, review };
        const asked = Object.entries(fields).filter(([, value]) => value !== undefined);
        // Checked before anything is written: a bad --review after a good --workspace changes nothing.
        if (asked.length > 0) parseTaskAdd({ key, ...fields });
        const workspace = options.workspace === false ? null : options.workspace;
        const set = await ws.setTaskRequirements({
          key,
          requiresFilesystem: options.requiresFilesystem,
          workspace,
        });
        const updated =
          asked.length === 0 ? null : await baton.updateTask({ key, ...fields, by: cliActor() });
        const changed =
          updated === null
            ? {}
            : changedFields(
                updated,
                asked.map(([name]) => name),
              );
        const requirements = options.requiresFilesystem !== undefined || workspace !== undefined;
        out.result({ ...set, ...changed }, () => {
          const lines = Object.entries(changed).map(([name, value]) => `${set.key} ${name} = ${cell(value)}`);
          if (!requirements && lines.length > 0) return lines;
          const files = set.requiresFilesystem
            ? 'requires the filesystem'
            : 'does not require the filesystem';
          return [...lines, `${set.key} ${files}, workspace ${cell(set.workspace)}`];
        });
      }),
    );
}

/** The task's fields `task set` was asked to change, as they now are (`review`: required or none). */
function changedFields(task: Task, asked: readonly string[]): Record<string, string | null> {
  const now: Record<string, string | null> = {
    title: task.title,
    body: task.body,
    url: task.url,
    review: task.reviewRequired ? 'required' : 'none',
  };
  return Object.fromEntries(asked.map((name) => [name, now[name] ?? null]));
}
