/**
 * Opens the store a command names (--db, else BATON_DB, else the project's .baton/baton.db: the
 * nearest above the working directory, store/project.ts, or here when there is none), hands a
 * Coordinator to the command and closes the store however the command ends.
 * The engine module loads lazily inside openStore, so a command pays only for the one it uses.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { Coordinator } from '../coordinator/coordinator.js';
import { openStore, parseDbUrl } from '../store/open.js';
import { projectDb, projectStateDir } from '../store/project.js';
import type { Store } from '../store/store.js';
import { Output } from './output.js';
import {
  BatonError,
  InvalidInputError,
  StoreUnavailableError,
  WorkspaceConfigurationError,
} from '../core/errors.js';
import { unresolvedRefusal } from '../coordinator/refusals.js';
import { remoteTarget } from './remote-target.js';
import { commandDone } from './exit-open.js';
import type { CliApi } from './remote-api.js';
import { shellWord } from '../core/text.js';
import { withoutPassword } from '../core/redact.js';

export interface GlobalOptions {
  readonly json?: boolean;
  readonly db?: string;
  readonly api?: string;
  readonly token?: string;
}

/** The database --db or BATON_DB names, else undefined. */
function namedDb(options: GlobalOptions): string | undefined {
  const fromEnv = process.env['BATON_DB'];
  return options.db ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined);
}

export function dbUrl(options: GlobalOptions): string {
  return namedDb(options) ?? projectDb(process.cwd());
}

/**
 * Where Baton keeps its files (logs, worktrees, keys): the project's `.baton/` when the database
 * is the project's; with --db or BATON_DB, `.baton/` of the working directory, as before.
 */
export function stateDir(options: GlobalOptions): string {
  return namedDb(options) === undefined ? projectStateDir(process.cwd()) : resolve('.baton');
}

/** How a command uses its connection: `scan`, it reads the database through once (openStore). */
export interface StoreUse {
  readonly scan?: boolean;
}

export function withCoordinator(
  command: Command,
  work: (baton: Coordinator, out: Output) => Promise<void>,
  use: StoreUse = {},
): Promise<void> {
  return withStore(command, (store, out) => work(new Coordinator(store), out), use);
}

/**
 * The one place a command gets its API: over HTTP in remote mode (remote-api.ts), else the
 * Coordinator on the database, with the same answers either way. A workspace the model cannot
 * resolve is WORKSPACE_UNRESOLVED with its cause and fix, from either.
 */
export async function withApi(
  command: Command,
  work: (baton: CliApi, out: Output) => Promise<void>,
): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const target = remoteTarget(options, process.env);
  try {
    if (target === null) return await withCoordinator(command, work);
    // Loaded here: a local call has no use for the HTTP client (node:http, node:https).
    const { RemoteApi } = await import('./remote-api.js');
    await work(new RemoteApi(target), new Output(options.json === true));
  } catch (error) {
    throw error instanceof WorkspaceConfigurationError ? unresolvedRefusal(error) : error;
  }
}

/**
 * Why a command needs the database itself, by command path; what is not named here and opens
 * the store is refused remotely with the general reason.
 */
const LOCAL_ONLY: Readonly<Record<string, string>> = {
  up: 'it runs the dispatcher and the agents on this machine against the database',
  serve: 'it is what serves the HTTP API, from the database',
  init: 'it creates the database (a SQLite file here, or the tables of a PostgreSQL database) itself',
  'db migrate': "it changes the schema with the database owner's credentials",
  'db roles': "it creates database roles with the database owner's credentials",
  'db backup': 'it copies the SQLite file itself, on the machine that holds it',
  'github sync': "it writes GitHub's issues into the database in bulk",
  'audit seal': 'it signs the ledger with a private key that stays on the database host',
  'audit prune': 'it signs a prune checkpoint with a private key that stays on the database host',
  'audit verify': "it reads and checks every ledger row from the database's own tables",
  'audit export': 'it streams the whole ledger from the database',
  'audit anchor': "it prints the ledger's anchor from the database's own tables",
  'audit commits': 'it reads git history on this machine against the ledger',
  'ledger init': 'it makes a signing key on this machine and registers it in the database',
  'ledger key': 'it reads the signing keys from the database directly',
  'ledger retire': "it is an operator's act on the ledger's keys, in the database itself",
};

/** Refuses remote mode for a command that needs the database itself, saying why and what to do. */
export function refuseRemote(command: Command): void {
  const options = command.optsWithGlobals<GlobalOptions>();
  if (remoteTarget(options, process.env) === null) return;
  const path = commandPath(command);
  const why = LOCAL_ONLY[path] ?? 'it needs the database itself';
  throw new InvalidInputError(
    `baton ${path} does not work over the HTTP API (BATON_URL or --api is set): ${why}`,
    'run it where the database is, with --db or BATON_DB (and BATON_URL unset)',
  );
}

/**
 * The store itself, for the composition roots among the commands (`baton up`). Only `baton up`
 * creates and migrates: every other command uses the database as it is (OpenIntent in errors.ts).
 */
export async function withStore(
  command: Command,
  work: (store: Store, out: Output) => Promise<void>,
  use: StoreUse = {},
): Promise<void> {
  const intent = command.name() === 'up' && command.parent?.parent == null ? 'create' : 'use';
  const options = command.optsWithGlobals<GlobalOptions>();
  refuseRemote(command);
  const store = await openStore(dbUrl(options), { intent, scan: use.scan === true });
  // Every command but `baton up` ends the process soon after: SQLite's is left open (exit-open.ts).
  let done = false;
  try {
    await work(store, new Output(options.json === true));
    done = true;
  } catch (error) {
    throw store.engine === 'sqlite' ? (sqliteFileFailure(dbUrl(options), error) ?? error) : error;
  } finally {
    const ending = done && intent === 'use' && commandDone();
    if (!ending || store.engine !== 'sqlite') await store.close();
  }
}

/** SQLite's codes of a file it cannot read or write (an I/O error, a read-only or immutable file). */
const FILE_FAILURE = /^SQLITE_(IOERR|READONLY|CANTOPEN|PERM)/;

/**
 * A failure of the SQLite file itself met after the open (`disk I/O error` alone named nothing):
 * the database unavailable (exit 5), naming the file and what to look at; null for any other error.
 */
function sqliteFileFailure(url: string, error: unknown): StoreUnavailableError | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof BatonError || typeof code !== 'string' || !FILE_FAILURE.test(code)) return null;
  const target = parseDbUrl(url);
  const path = target.engine === 'sqlite' ? resolve(target.path) : url;
  return new StoreUnavailableError(
    `the SQLite database ${path} failed: ${(error as Error).message} (${code})`,
    `check that file, its -wal and the disk holding them: free space, permissions, attributes (lsattr) and ` +
      'whether it is mounted read-only; then run again',
  );
}

/**
 * Refuses --json for a command that prints no JSON result (a server, a hook's protocol): exit 2,
 * one line saying what it prints instead, before anything is opened, started or written.
 */
export function refuseJson(command: Command, prints: string, hint = 'leave out --json'): void {
  if (command.optsWithGlobals<GlobalOptions>().json !== true) return;
  throw new InvalidInputError(`--json does not apply to baton ${commandPath(command)}: ${prints}`, hint);
}

/** `task list` for the command `baton task list`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current?.parent != null; current = current.parent) {
    names.unshift(current.name());
  }
  return names.join(' ');
}

/** Collects a repeatable option (`--label a --label b`). */
export function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * The global flags that chose the store or the API, as the caller typed them, for a command this
 * one prints to be run next (the next page of a list): `--db` (a PostgreSQL URL without its
 * password: pg then reads PGPASSWORD or ~/.pgpass) and `--api`. Never `--token`, a secret; the
 * environment (BATON_DB, BATON_URL, BATON_TOKEN) carries over by itself.
 */
export function targetFlags(command: Command): string[] {
  const { db, api } = command.optsWithGlobals<GlobalOptions>();
  return [
    ...(db === undefined ? [] : [`--db ${shellWord(withoutPassword(db))}`]),
    ...(api === undefined ? [] : [`--api ${shellWord(api)}`]),
  ];
}
