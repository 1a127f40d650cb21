/**
 * `baton mcp --print-config claude|codex|cursor`: the snippet each MCP client needs to start
 * `baton mcp`, with absolute paths so it works from any directory, and where it goes.
 */
import { InvalidInputError } from '../../core/errors.js';

const MCP_CLIENTS = ['claude', 'codex', 'cursor'] as const;
export type McpClientName = (typeof MCP_CLIENTS)[number];

export interface McpLaunch {
  /** The node binary and bin/baton.js, absolute. */
  readonly node: string;
  readonly batonBin: string;
  /** The database the server reaches, absolute. */
  readonly db: string;
}

export interface McpConfigSnippet {
  /** Where the snippet goes, in words. */
  readonly where: string;
  readonly text: string;
  /** The same settings as an object: `text` parsed (JSON), or its table (codex's TOML). */
  readonly settings: unknown;
}

export function mcpConfig(client: string, launch: McpLaunch): McpConfigSnippet {
  const server = { command: launch.node, args: [launch.batonBin, 'mcp'], env: { BATON_DB: launch.db } };
  switch (client) {
    case 'claude': {
      const settings = { mcpServers: { baton: { type: 'stdio', ...server } } };
      return {
        where:
          '.mcp.json at the root of your project (Claude Code asks once to approve it); or run ' +
          `claude mcp add baton --env BATON_DB=${launch.db} -- ${launch.node} ${launch.batonBin} mcp`,
        text: json(settings),
        settings,
      };
    }
    case 'cursor': {
      const settings = { mcpServers: { baton: server } };
      return {
        where: '.cursor/mcp.json in your project (or ~/.cursor/mcp.json for every project)',
        text: json(settings),
        settings,
      };
    }
    case 'codex':
      return {
        where: '~/.codex/config.toml (or .codex/config.toml in a trusted project)',
        text: [
          '[mcp_servers.baton]',
          `command = ${toml(launch.node)}`,
          `args = [${toml(launch.batonBin)}, "mcp"]`,
          `env = { BATON_DB = ${toml(launch.db)} }`,
          '',
        ].join('\n'),
        settings: { mcp_servers: { baton: server } },
      };
    default:
      throw new InvalidInputError(
        `unknown MCP client ${JSON.stringify(client)}`,
        `give one of ${MCP_CLIENTS.join(', ')}`,
      );
  }
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
/** A TOML basic string: JSON's escapes are a subset TOML reads the same way. */
const toml = (value: string): string => JSON.stringify(value);
