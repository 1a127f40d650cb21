/**
 * The environment an agent starts with. Agents run code a model wrote, so they inherit an
 * allowlist of the runner's environment, never the whole of it: the runner may hold
 * AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN or a database password that no agent should see.
 *
 * | passed                                   | why                                               |
 * |------------------------------------------|---------------------------------------------------|
 * | PATH, HOME, USER, LOGNAME, SHELL, TMPDIR | to find programs and a home; no secret in them    |
 * | TERM, TZ, LANG, LANGUAGE, LC_*           | the locale and terminal                           |
 * | BATON_*                                  | Baton's own (the runner sets most of them itself) |
 * |   but BATON_TOKEN, BATON_URL and          |   the runner's reach into Baton and its signing   |
 * |   BATON_LEDGER_KEY                         |   key: an agent gets its own token or none        |
 * | each name given with --agent-env NAME    | the operator's choice, e.g. ANTHROPIC_API_KEY;    |
 * |   (NAME* for every name with a prefix)   |   PGPASSFILE for agents that call the database    |
 *
 * Then the runner's own values (BATON_DB without its password, BATON_KEY, …) are set over these,
 * and Baton's own `bin/` goes first on PATH with the runner's Node in BATON_NODE (withBatonOnPath),
 * so the `baton` an agent calls is the runner's, whether or not Baton is installed anywhere.
 *
 * When `baton up` serves the HTTP API, an agent reaches Baton through it alone (BATON_URL and a
 * BATON_TOKEN bound to its session) and must hold no way into the database: withoutDatabase()
 * then drops BATON_DB, every libpq variable (PG*), DATABASE_URL, and any variable whose value
 * names a database (a postgres:// or sqlite: URL, or the runner's own database path), even one
 * the operator passed with --agent-env.
 */
import { fileURLToPath } from 'node:url';
import { InvalidInputError } from '../core/errors.js';

const ALWAYS = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  'TERM',
  'TZ',
  'LANG',
  'LANGUAGE',
]);
const ALWAYS_PREFIXES = ['LC_', 'BATON_'];
/**
 * The runner's own way into Baton (an operator or host token, the API it names) and the ledger's
 * signing key: under BATON_* but never inherited, so that `baton up --no-http` started from a shell
 * holding an operator token does not hand it to every agent. Passed only when named exactly with
 * --agent-env; in HTTP mode the runner sets BATON_URL and BATON_TOKEN to the agent's own.
 */
const RUNNER_ONLY = new Set(['BATON_TOKEN', 'BATON_URL', 'BATON_LEDGER_KEY']);

/** An --agent-env entry: a variable name, or a prefix ending in `*`. */
export function validateAgentEnvName(raw: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*\*?$/.test(raw)) {
    throw new InvalidInputError(
      `--agent-env ${JSON.stringify(raw)} is not an environment variable name`,
      'give a name such as ANTHROPIC_API_KEY, or a prefix such as ANTHROPIC_*',
    );
  }
  return raw;
}

/** Whether an agent inherits the runner's variable `name`, given the --agent-env names `extra`. */
export function allowed(name: string, extra: readonly string[]): boolean {
  if (RUNNER_ONLY.has(name)) return extra.includes(name);
  if (ALWAYS.has(name) || ALWAYS_PREFIXES.some((prefix) => name.startsWith(prefix))) return true;
  return extra.some((pattern) =>
    pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
  );
}

/** The agent's environment: the allowed part of `parent`, then `own` (the runner's values) over it. */
export function agentEnvironment(
  parent: NodeJS.ProcessEnv,
  extra: readonly string[],
  own: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && allowed(name, extra)) env[name] = value;
  }
  return { ...env, ...own };
}

const DATABASE_NAMES = /^(BATON_DB|DATABASE_URL|PG[A-Z_]*)$/;
const DATABASE_VALUES = /\b(postgres(ql)?:\/\/|sqlite:)/i;

/** The environment without anything that reaches the database `dbUrl` (see the module doc). */
export function withoutDatabase(env: Record<string, string>, dbUrl: string): Record<string, string> {
  const path = dbUrl.replace(/^sqlite:/, '');
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (DATABASE_NAMES.test(name) || DATABASE_VALUES.test(value)) continue;
    if (path.length > 0 && value.includes(path)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Baton's `bin/` (bin/baton runs bin/baton.js with BATON_NODE): three folders up from this module,
 * dist/src/daemon/, and from the CLI bundle, dist/src/cli-bundle/, alike.
 */
const BATON_BIN = fileURLToPath(new URL('../../../bin', import.meta.url));

/** The environment with the runner's `baton` first on PATH and its Node named in BATON_NODE. */
export function withBatonOnPath(env: Record<string, string>): Record<string, string> {
  const path = env['PATH'] === undefined || env['PATH'] === '' ? '/usr/local/bin:/usr/bin:/bin' : env['PATH'];
  return { ...env, PATH: `${BATON_BIN}:${path}`, BATON_NODE: process.execPath };
}
