/**
 * `baton plan <key>`: the task's workspace plan, resolved by the decision table of
 * core/workspace-plan.ts. Exits 2 with WORKSPACE_UNRESOLVED, its cause and its fix, when the run
 * needs a workspace and none is bound.
 */
import type { Command } from 'commander';
import { withApi } from '../run.js';
import type { PlanDetail } from '../../coordinator/workspaces.js';

export function registerPlan(program: Command): void {
  program
    .command('plan <key>')
    .description("print a task's workspace plan: a worktree, an exclusive lock on a directory, or none")
    .option('--agent <name>', "the agent that will run it (default: the task's assignee, if an agent)")
    .action((key: string, options: { agent?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const ws = baton.workspaces;
        const detail = await ws.plan({ key, agent: options.agent });
        out.result(detail.plan, () => planLine(detail));
      }),
    );
}

function planLine({ plan, requirements, agent }: PlanDetail): string {
  const by = agent === null ? 'no agent' : `agent ${agent.name}`;
  if (plan.lockMode === 'none') {
    return `${requirements.key}: lock mode none (${by}): runs in parallel, without a workspace`;
  }
  const { name, kind, path } = plan.workspace;
  if (kind === 'worktree') {
    // Worktree runs take no lock: each claim gets a checkout of its own (run-workspace.ts).
    const where = `workspace ${name} (repository at ${path}; no lock, the claim is the exclusion)`;
    return `${requirements.key}: a worktree of its own in ${where}, ${by}`;
  }
  return `${requirements.key}: exclusive lock on workspace ${name} (${kind} at ${path}), ${by}`;
}
