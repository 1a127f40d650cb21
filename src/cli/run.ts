/**
 * Opens the store a command names (--db, else BATON_DB, else .baton/baton.db under the working
 * directory), hands a Coordinator to the command and closes the store however the command ends.
 * The engine module loads lazily inside openStore, so a command pays only for the one it uses.
 */
import type { Command } from 'commander';
import { Coordinator } from '../coordinator/coordinator.js';
import { DEFAULT_DB, openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { Output } from './output.js';
import { InvalidInputError } from '../core/errors.js';
import { RemoteCoordinator, remoteTarget, type AgentApi } from './remote.js';

export interface GlobalOptions {
  readonly json?: boolean;
  readonly db?: string;
  readonly api?: string;
  readonly token?: string;
}

export function dbUrl(options: GlobalOptions): string {
  const fromEnv = process.env['BATON_DB'];
  return options.db ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_DB);
}

export function withCoordinator(
  command: Command,
  work: (baton: Coordinator, out: Output) => Promise<void>,
): Promise<void> {
  return withStore(command, (store, out) => work(new Coordinator(store), out));
}

/**
 * For the commands an agent uses: over the HTTP API in remote mode (remote.ts), else the
 * Coordinator on the database, with the same answers either way.
 */
export async function withAgentApi(
  command: Command,
  work: (baton: AgentApi, out: Output) => Promise<void>,
): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const target = remoteTarget(options, process.env);
  if (target === null) return withCoordinator(command, work);
  await work(new RemoteCoordinator(target), new Output(options.json === true));
}

/** The store itself, for the composition roots among the commands (`baton up`). */
export async function withStore(
  command: Command,
  work: (store: Store, out: Output) => Promise<void>,
): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  if (remoteTarget(options, process.env) !== null) {
    throw new InvalidInputError(
      `baton ${commandPath(command)} does not work over the HTTP API yet (BATON_URL or --api is set)`,
      'name the database with --db; over HTTP work: ' +
        'claim, heartbeat, release, effect, task show, next, escalate and force-release',
    );
  }
  const store = await openStore(dbUrl(options));
  try {
    await work(store, new Output(options.json === true));
  } finally {
    await store.close();
  }
}

/** `task list` for the command `baton task list`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent != null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Collects a repeatable option (`--label a --label b`). */
export function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
