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

export interface GlobalOptions {
  readonly json?: boolean;
  readonly db?: string;
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

/** The store itself, for the composition roots among the commands (`baton up`). */
export async function withStore(
  command: Command,
  work: (store: Store, out: Output) => Promise<void>,
): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(dbUrl(options));
  try {
    await work(store, new Output(options.json === true));
  } finally {
    await store.close();
  }
}

/** Collects a repeatable option (`--label a --label b`). */
export function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
