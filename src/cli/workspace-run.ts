/**
 * Like withCoordinator (run.ts), for the commands of the workspace model: opens the store the
 * command names, hands it over as the Workspaces use cases (and the Coordinator, for commands
 * that need both) and closes it however the command ends. Also turns a
 * WorkspaceConfigurationError into the WORKSPACE_UNRESOLVED refusal every adapter shows.
 */
import type { Command } from 'commander';
import { Coordinator } from '../coordinator/coordinator.js';
import { Workspaces } from '../coordinator/workspaces.js';
import { WorkspaceConfigurationError } from '../core/errors.js';
import { openStore } from '../store/open.js';
import { Output } from './output.js';
import { Refusal } from './refusal.js';
import { dbUrl, type GlobalOptions } from './run.js';

export async function withWorkspaces(
  command: Command,
  work: (workspaces: Workspaces, out: Output, baton: Coordinator) => Promise<void>,
): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(dbUrl(options));
  try {
    await work(new Workspaces(store), new Output(options.json === true), new Coordinator(store));
  } catch (error) {
    throw error instanceof WorkspaceConfigurationError ? unresolvedRefusal(error) : error;
  } finally {
    await store.close();
  }
}

/**
 * `WORKSPACE_UNRESOLVED` with its cause and its fix: exit 2, one stderr line, and with --json
 * `{"error": "WORKSPACE_UNRESOLVED", "cause": …, "fix": …, "key": …, …}` on stdout.
 */
export function unresolvedRefusal(error: WorkspaceConfigurationError): Refusal {
  const fix = error.hint ?? '';
  return new Refusal('workspace_unresolved', 'WORKSPACE_UNRESOLVED', error.message, fix, {
    cause: error.message,
    fix,
    key: error.key,
    agent: error.agent,
    project: error.project,
  });
}
