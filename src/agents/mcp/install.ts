/**
 * `baton mcp --install claude|codex|cursor`: Baton's server merged into the client's own config
 * file, as `baton hooks install claude` merges into settings.json: running it twice changes
 * nothing, it replaces Baton's entry where it was, keeps everything else (a TOML file byte for
 * byte), and refuses a file it cannot read rather than rewrite it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { InvalidInputError } from '../../core/errors.js';
import { replaceConfigFile } from '../../os/config-file.js';
import { mcpConfig, type McpLaunch } from './config.js';
import { startsWith, tomlStatements } from './toml-tables.js';

export interface McpInstallResult {
  readonly client: string;
  readonly file: string;
  /** false when the file already said exactly this. */
  readonly changed: boolean;
}

const BATON_TABLE = ['mcp_servers', 'baton'];

/** Where each client reads its servers when --file names no other file. */
export function defaultMcpFile(client: string, env: NodeJS.ProcessEnv): string {
  if (client === 'codex') return join(env['CODEX_HOME'] || join(homedir(), '.codex'), 'config.toml');
  return resolve(client === 'cursor' ? '.cursor/mcp.json' : '.mcp.json');
}

/** Merges Baton's server into `file`; its folder is made only when `makeDir` (a client's default place). */
export function installMcpConfig(
  client: string,
  launch: McpLaunch,
  file: string,
  makeDir: boolean,
): McpInstallResult {
  const snippet = mcpConfig(client, launch);
  if (!makeDir && !existsSync(dirname(file))) {
    throw new InvalidInputError(
      `--file ${file}: the folder ${dirname(file)} does not exist; nothing was written`,
      'create it first, or give the path of the config file the client reads',
    );
  }
  const before = existsSync(file) ? readFileSync(file, 'utf8') : null;
  const after =
    client === 'codex'
      ? mergeToml(before ?? '', snippet.text, file)
      : mergeJson(before, (snippet.settings as { mcpServers: { baton: unknown } }).mcpServers.baton, file);
  if (before === after) return { client, file, changed: false };
  replaceConfigFile(file, after);
  return { client, file, changed: true };
}

function mergeJson(text: string | null, server: unknown, file: string): string {
  let parsed: unknown = {};
  try {
    if (text !== null && text.trim() !== '') parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(
      `${file} is not valid JSON (${(error as Error).message}); nothing was changed`,
      'fix the file, then run the command again',
    );
  }
  const config = parsed as { mcpServers?: unknown };
  const servers = config?.mcpServers;
  const isObject = (value: unknown): boolean =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(config) || (servers !== undefined && !isObject(servers))) {
    throw new InvalidInputError(
      `${file} does not hold a JSON object with an "mcpServers" object; nothing was changed`,
      'fix the file first',
    );
  }
  const merged = { ...config, mcpServers: { ...(servers as object | undefined), baton: server } };
  return `${JSON.stringify(merged, null, 2)}\n`;
}

/** The file with Baton's table in place of the old one (or appended), every other byte kept. */
function mergeToml(text: string, ours: string, file: string): string {
  const statements = tomlStatements(text, file, BATON_TABLE);
  const spans: { start: number; end: number }[] = [];
  let inOurs = false;
  for (const st of statements) {
    if (st.kind !== 'key') inOurs = st.kind === 'table' && startsWith(st.path, BATON_TABLE);
    if (st.kind === 'table' && inOurs) {
      spans.push({ start: text.lastIndexOf('\n', st.start - 1) + 1, end: st.end });
    } else if (inOurs) {
      (spans.at(-1) as { end: number }).end = st.end;
    } else if (startsWith(st.path, BATON_TABLE) || startsWith(BATON_TABLE, st.path)) {
      if (st.kind !== 'table') {
        throw new InvalidInputError(
          `${file} defines Baton's server as ${st.path.join('.')} in a form this does not edit; nothing was changed`,
          'remove that entry, or write the table `baton mcp --print-config codex` prints by hand',
        );
      }
    }
  }
  if (spans.length === 0) return text === '' ? ours : `${text}${text.endsWith('\n') ? '' : '\n'}\n${ours}`;
  let out = text.slice(spans.at(-1)?.end);
  for (let at = spans.length - 1; at >= 0; at--) {
    const span = spans[at] as { start: number; end: number };
    const gap =
      at === 0 ? text.slice(0, span.start) : text.slice((spans[at - 1] as { end: number }).end, span.start);
    // Between two of Baton's tables, only comments are kept: blank lines went with the table.
    out = (at === 0 ? `${gap}${ours}` : gap.trim() === '' ? '' : gap) + out;
  }
  return out;
}
