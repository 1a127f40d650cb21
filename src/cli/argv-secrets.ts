/**
 * Secrets on the command line of a long-running command (docs/security.md, "Secrets on the
 * command line"). A process's arguments are world-readable (`ps`, /proc/<pid>/cmdline, mode 0444
 * for every uid); its environment is readable by its own uid alone (/proc/<pid>/environ, 0400).
 * So a `--db` URL with its password or a `--token` given to `baton up` sits in front of every
 * process of the machine for as long as it runs: under `--agent-uids`, in front of the agents the
 * flag is there to keep out of the database (a reviewer read the password there and rewrote
 * tokens with psql). There they are refused; without `--agent-uids` the agents run as the
 * runner's uid and read its environment anyway, so a warning says it and the command runs.
 *
 * Decided per flag: `--db` only when its URL carries a password (a path or a password-less URL
 * is no secret; libpq then takes it from PGPASSWORD or ~/.pgpass); `--token` always (it is one).
 * `--token-env`, `--ledger-key` and `GITHUB_WEBHOOK_SECRET` name a variable or a file, not a secret.
 */
import { InvalidInputError } from '../core/errors.js';
import { hasPassword } from '../core/redact.js';
import { writeErrorLine } from './output.js';
import type { GlobalOptions } from './run.js';

const SEEN = 'which every uid on this machine can read (ps, /proc/<pid>/cmdline)';

/** The secrets `globals` took from the command line, each as [flag, where to give it instead]. */
function secretsOnArgv(globals: GlobalOptions): readonly [string, string][] {
  const found: [string, string][] = [];
  if (globals.db !== undefined && hasPassword(globals.db))
    found.push([
      '--db carries the database password',
      'give the URL in the BATON_DB environment variable (readable by this uid alone), ' +
        'or leave the password out of it and use PGPASSWORD or ~/.pgpass',
    ]);
  if (globals.token !== undefined)
    found.push(['--token carries an API token', 'give it in the BATON_TOKEN environment variable']);
  return found;
}

/**
 * Refuses (exit 2, before anything is opened or started) a secret on the command line of
 * `baton <command>` when agents of other uids share the machine (`refuse`); else warns once per
 * secret on stderr and lets the command run.
 */
export function checkArgvSecrets(command: string, globals: GlobalOptions, refuse: boolean): void {
  for (const [what, instead] of secretsOnArgv(globals)) {
    if (refuse)
      throw new InvalidInputError(
        `baton ${command} --agent-uids: ${what} on the command line, ${SEEN}, the agents' uids too`,
        instead,
      );
    writeErrorLine(`warning: ${what} on the command line of baton ${command}, ${SEEN}`, instead);
  }
}
