/**
 * `baton task depend | undepend`, and the lines `task show` prints for a task's dependencies
 * (docs/decisions/0035-task-dependencies.md): a task waits until every task it depends on is done.
 */
import type { Command } from 'commander';
import type { Output } from '../output.js';
import type { TaskDependencies, TaskLink } from '../../store/lifecycle-store.js';
import { cliActor } from './lifecycle.js';
import { withApi } from '../run.js';

const SESSION_HELP = 'the session you act under, for the ledger (default: none)';

export function registerTaskDeps(task: Command): void {
  task
    .command('depend <key>')
    .description('make a task wait until another is done: its jobs are not run before (see task show)')
    .requiredOption('--on <key>', 'the task it waits for')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, options: { on: string; session?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const links = await baton.lifecycle.depend({ key, on: options.on, by: cliActor(options.session) });
        print(out, key, links, `${key} waits for ${options.on}`);
      }),
    );
  task
    .command('undepend <key>')
    .description('stop a task waiting for another (remove the dependency)')
    .requiredOption('--on <key>', 'the task it no longer waits for')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, options: { on: string; session?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const links = await baton.lifecycle.undepend({ key, on: options.on, by: cliActor(options.session) });
        print(out, key, links, `${key} no longer waits for ${options.on}`);
      }),
    );
}

function print(out: Output, key: string, links: TaskDependencies, line: string): void {
  out.result({ key, ...links }, () => [line, ...dependencyLines(links)]);
}

const linkText = (link: TaskLink): string =>
  `${link.key} (${link.state})${link.title === '' ? '' : `  ${link.title}`}`;

/** `task show`'s lines: what it waits for (blocked while any is not done) and what waits for it. */
export function dependencyLines(links: TaskDependencies): string[] {
  const pending = links.waitsFor.filter((link) => link.state !== 'done');
  const closed = pending.filter((link) => link.state === 'closed');
  const keys = (list: readonly TaskLink[]): string => list.map((link) => link.key).join(', ');
  const stuck = closed.length === 0 ? '' : ` (closed: reopen ${keys(closed)}, or \`baton task undepend\` it)`;
  const head =
    pending.length === 0 ? '  waits for (all done):' : `  blocked: waits for ${keys(pending)}${stuck}:`;
  return [
    ...(links.waitsFor.length === 0 ? [] : [head, ...links.waitsFor.map((link) => `    ${linkText(link)}`)]),
    ...(links.waitedBy.length === 0
      ? []
      : ['  waited for by:', ...links.waitedBy.map((link) => `    ${linkText(link)}`)]),
  ];
}
