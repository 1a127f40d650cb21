/**
 * `baton mcp`: serves Baton's tools to an MCP client over stdio (src/agents/mcp/). stdout belongs
 * to the protocol, so nothing else is printed there while it serves. `--print-config` prints the
 * snippet a client needs instead (to stdout; where it goes, to stderr); `--install` merges it into
 * the client's config file (src/agents/mcp/install.ts).
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { mcpConfig } from '../../agents/mcp/config.js';
import { defaultMcpFile, installMcpConfig } from '../../agents/mcp/install.js';
import { InvalidInputError } from '../../core/errors.js';
import { installedBatonBin } from '../../coordinator/guard.js';
import { validateDuration } from '../../core/validate.js';
import { systemClock } from '../../daemon/clock.js';
import { withoutPassword } from '../../core/redact.js';
import { absoluteDbUrl } from '../../store/open.js';
import { Output, writeJson } from '../output.js';
import { dbUrl, refuseJson, type GlobalOptions } from '../run.js';
import { batonVersion } from '../version.js';

interface McpOptions {
  readonly printConfig?: string;
  readonly install?: string;
  readonly file?: string;
  readonly heartbeatInterval?: string;
}

export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description('serve Baton to an MCP client (Claude Code, Codex, Cursor...) over stdio')
    .option(
      '--print-config <client>',
      'print the config snippet for claude, codex or cursor (with --json: as JSON), and exit',
    )
    .option(
      '--install <client>',
      "merge Baton's server into the config file of claude, codex or cursor (idempotent), and exit",
    )
    .option(
      '--file <path>',
      'with --install: the file (default: .mcp.json, ~/.codex/config.toml, .cursor/mcp.json)',
    )
    .option('--heartbeat-interval <duration>', "how often the server's session heartbeats (default 2)")
    .addHelpText(
      'after',
      [
        '',
        'The session comes from BATON_SESSION (and the claim from BATON_KEY and BATON_EPOCH), as a runner',
        'gives its agents; otherwise one is started on first use and ended when the client disconnects.',
        'Tools: baton_next, baton_claim, baton_heartbeat, baton_release, baton_effect, baton_escalate,',
        'baton_status, baton_show_task.',
      ].join('\n'),
    )
    .action(async (options: McpOptions, cmd: Command) => {
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      if (options.install !== undefined || options.file !== undefined) return install(options, globals);
      if (options.printConfig !== undefined) {
        const batonBin = installedBatonBin();
        const db = withoutPassword(absoluteDbUrl(dbUrl(globals), process.cwd()));
        const snippet = mcpConfig(options.printConfig, { node: process.execPath, batonBin, db });
        process.stderr.write(`# ${snippet.where}\n`);
        // With --json, the settings as JSON: a JSON client's file as is, codex's TOML table as an object.
        if (globals.json === true) writeJson(snippet.settings);
        else process.stdout.write(snippet.text);
        return;
      }
      refuseJson(
        cmd,
        'it serves the MCP protocol on stdout until the client disconnects',
        'leave out --json; `baton --json mcp --print-config <client>` prints the client settings as JSON',
      );
      // Loaded here, not at the top: every other command would pay for the MCP SDK.
      const { runMcpServer } = await import('../../agents/mcp/server.js');
      const { openAgentClient } = await import('../../agents/local-client.js');
      const client = await openAgentClient({ db: globals.db, env: process.env, cwd: process.cwd() });
      try {
        await runMcpServer({
          client,
          env: process.env,
          version: batonVersion(),
          heartbeatIntervalMs: intervalMs(options.heartbeatInterval),
          clock: systemClock,
        });
      } finally {
        await client.close();
      }
    });
}

function install(options: McpOptions, globals: GlobalOptions): void {
  if (options.install === undefined || options.printConfig !== undefined) {
    throw new InvalidInputError(
      options.install === undefined
        ? '--file goes with --install'
        : '--install and --print-config ask for two things',
      'give `--install <client>` (and --file to name its config file), or `--print-config <client>` alone',
    );
  }
  const launch = {
    node: process.execPath,
    batonBin: installedBatonBin(),
    db: withoutPassword(absoluteDbUrl(dbUrl(globals), process.cwd())),
  };
  const explicit = options.file !== undefined;
  const file = explicit ? resolve(options.file) : defaultMcpFile(options.install, process.env);
  const result = installMcpConfig(options.install, launch, file, !explicit);
  new Output(globals.json === true).result(result, () =>
    result.changed ? `wrote Baton's MCP server into ${result.file}` : `${result.file} already has it`,
  );
}

/** A duration (`2s`, `500ms`; a bare number is seconds) from 0.1 s to an hour. */
function intervalMs(raw: string | undefined): number {
  return raw === undefined ? 2000 : validateDuration('--heartbeat-interval', raw, 100, 3_600_000);
}
