/** `baton token create | list | revoke`: API tokens, shown once, stored only as a hash. */
import type { Command } from 'commander';
import type { Token } from '../../core/token.js';
import { cell, iso, table } from '../output.js';
import { withApi } from '../run.js';
import { cliActor } from './lifecycle.js';

interface CreateOptions {
  readonly scope: string;
  readonly session?: string;
  readonly host?: string;
  readonly name?: string;
  readonly expires?: string;
}

export function registerToken(program: Command): void {
  const tokenCommand = program
    .command('token')
    .description('API tokens for `baton serve` and `baton up`: create, list and revoke them');

  tokenCommand
    .command('create')
    .description('make a token and print it once (only its hash is kept)')
    .requiredOption('--scope <scope>', 'viewer, agent (one session), host (one host) or operator')
    .option('--session <id>', 'the session an agent token acts for')
    .option('--host <name>', 'the host a host token acts for')
    .option('--name <name>', 'a name to tell tokens apart')
    .option('--expires <duration>', 'lifetime such as 30d or 12h (default: until revoked)')
    .action((options: CreateOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const { token: created, secret } = await baton.tokens.create({ ...options, by: cliActor() });
        // The secret alone on stdout, so T=$(baton token create …) keeps it; the note on stderr.
        out.result({ id: created.id, token: secret, scope: created.scope }, () => secret);
        if (!out.json) {
          process.stderr.write(`token ${created.id} (${describe(created)}): shown once, keep it now\n`);
        }
      }),
    );

  tokenCommand
    .command('list')
    .description('list the tokens that may still open the API, oldest first, without their secrets')
    .option('--all', 'every token: revoked, expired and spent ones too (`baton up` leaves one per job run)')
    .action((options: { all?: boolean }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const tokens = await baton.tokens.list({ all: options.all === true });
        out.result(tokens, () =>
          tokens.length === 0
            ? options.all === true
              ? 'no tokens: make one with `baton token create --scope viewer`'
              : 'no live tokens (`baton token list --all` shows revoked and expired ones): make one with ' +
                '`baton token create --scope viewer`'
            : table(
                ['ID', 'SCOPE', 'BOUND TO', 'NAME', 'CREATED', 'EXPIRES', 'REVOKED'],
                tokens.map((token) => [
                  token.id,
                  token.scope,
                  bound(token),
                  cell(token.name),
                  iso(token.createdAt),
                  token.expiresAt === null ? '-' : iso(token.expiresAt),
                  revokedCell(token),
                ]),
              ),
        );
      }),
    );

  tokenCommand
    .command('revoke <id>')
    .description('revoke a token: it opens nothing from then on')
    .action((id: string, _o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const { token: target, revoked } = await baton.tokens.revoke(id, cliActor());
        out.result({ ...target, revoked }, () =>
          revoked ? `revoked token ${target.id}` : `token ${target.id} was already revoked`,
        );
      }),
    );
}

const binding = (token: Token): string | null =>
  token.session !== null ? `session ${token.session}` : token.host !== null ? `host ${token.host}` : null;

/** Its binding, and for a dashboard sign-in the token it was made from: `session 7, sign-in of 0123…`. */
function bound(token: Token): string {
  const signIn = token.loginOf === null ? null : `sign-in of ${token.loginOf}`;
  return [binding(token), signIn].filter((part) => part !== null).join(', ') || '-';
}

/**
 * When it was revoked and by whom: `2026-… by ann@box`. A revocation that named nobody (a run's
 * token revoked by its runner at the run's end, one from before migration 0047 whose ledger row
 * was pruned, or a list from an older server) says so rather than guessing.
 */
function revokedCell(token: Token): string {
  if (token.revokedAt === null) return '-';
  return `${iso(token.revokedAt)} ${token.revokedBy === null ? '(nobody named)' : `by ${token.revokedBy}`}`;
}

function describe(token: Token): string {
  const bindings = binding(token);
  return bindings === null ? token.scope : `${token.scope}, ${bindings}`;
}
