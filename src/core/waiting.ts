/**
 * Why a queued job waits, in a few classes a metric can carry as a label (the reason text itself
 * names workspaces, jobs and hosts, too many values for a label). The texts are the dispatcher's
 * (daemon/dispatcher.ts, core/capacity.ts, core/workspace-lock.ts).
 */
export const WAITING_CLASSES = [
  'workspace_held',
  'task_held',
  'workspace_unresolved',
  'ram',
  'slots',
  'no_host',
  'gate',
  'agent_command',
  'other',
] as const;
export type WaitingClass = (typeof WAITING_CLASSES)[number];

const RULES: readonly (readonly [RegExp, WaitingClass])[] = [
  [/^waiting for workspace /, 'workspace_held'],
  // Its task is claimed (a person's 8 h claim, an earlier run stopping): core/dispatch-plan.ts.
  [/^waiting for .+, claimed by session \d+ on /, 'task_held'],
  [/^SKIPPED workspace_unresolved/, 'workspace_unresolved'],
  [/^needs \d+ MB/, 'ram'],
  [/at its job limit/, 'slots'],
  [/^no host has registered|^every host is disabled|^no enabled host is live|^no host fits/, 'no_host'],
  [/^waiting for .* approval$/, 'gate'],
  // A job without a command, and no live host with a free slot has an agent command (core/capacity.ts).
  [/^waiting for a host with an agent command/, 'agent_command'],
];

export function waitingClass(reason: string): WaitingClass {
  return RULES.find(([pattern]) => pattern.test(reason))?.[1] ?? 'other';
}
