/**
 * `baton hooks install claude` and `baton hooks uninstall`: Baton's hooks in a project's
 * `.claude/settings.json`, merged with whatever the user has there. Baton's hook commands are
 * recognised by their shape (`… hook <event>` of a `baton` command), so installing twice changes
 * nothing, reinstalling replaces them in place of the old ones, and uninstalling removes exactly
 * them, keeping every other setting and hook, and the order of the file's keys.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidInputError } from '../../core/errors.js';
import { replaceConfigFile } from '../../os/config-file.js';
import type { HookCommand } from './hook-input.js';

/** The tools whose use needs a current claim: the ones that change files or run commands. */
const GUARDED_TOOLS = 'Edit|Write|MultiEdit|NotebookEdit|Bash';

export type ReleaseOn = 'stop' | 'session-end';

export interface HookInstallParams {
  /** The project: settings go to <dir>/.claude/settings.json. */
  readonly dir: string;
  /** Absolute paths of node and bin/baton.js, which the hooks run. */
  readonly node: string;
  readonly batonBin: string;
  /** The database, absolute, used when the environment names none. */
  readonly db: string;
  /** The task every session in this project works, if fixed. */
  readonly task: string | null;
  /** When the claim is given back: at each Stop (the end of a turn) or only when the session ends. */
  readonly releaseOn: ReleaseOn;
}

export interface HookInstallResult {
  readonly file: string;
  /** false when the file already said exactly this. */
  readonly changed: boolean;
  readonly events: readonly string[];
}

interface HookEntry {
  type?: unknown;
  command?: unknown;
  [field: string]: unknown;
}
interface MatcherGroup {
  matcher?: unknown;
  hooks?: HookEntry[];
  [field: string]: unknown;
}
type Settings = Record<string, unknown> & { hooks?: Record<string, MatcherGroup[]> };

const OURS = /baton\S*'? hook (session-start|pre-tool|post-tool|stop|session-end)\b/;

function settingsFile(dir: string): string {
  return join(dir, '.claude', 'settings.json');
}

const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** The shell command Claude Code runs for one event. */
function hookCommand(params: HookInstallParams, command: HookCommand): string {
  const task = params.task === null ? '' : ` --task ${quote(params.task)}`;
  return `${quote(params.node)} ${quote(params.batonBin)} hook ${command} --default-db ${quote(params.db)}${task}`;
}

function batonGroups(params: HookInstallParams): Record<string, MatcherGroup> {
  const entry = (command: HookCommand): HookEntry[] => [
    { type: 'command', command: hookCommand(params, command), timeout: 30 },
  ];
  const groups: Record<string, MatcherGroup> = {
    SessionStart: { hooks: entry('session-start') },
    PreToolUse: { matcher: GUARDED_TOOLS, hooks: entry('pre-tool') },
    PostToolUse: { matcher: '*', hooks: entry('post-tool') },
    SessionEnd: { hooks: entry('session-end') },
  };
  if (params.releaseOn === 'stop') groups['Stop'] = { hooks: entry('stop') };
  return groups;
}

export function installHooks(params: HookInstallParams): HookInstallResult {
  const file = settingsFile(params.dir);
  const before = readSettings(file);
  const settings = withoutBaton(before.settings);
  const hooks = { ...(settings.hooks ?? {}) };
  const groups = batonGroups(params);
  for (const [event, group] of Object.entries(groups)) hooks[event] = [...(hooks[event] ?? []), group];
  const after = `${JSON.stringify({ ...settings, hooks }, null, 2)}\n`;
  return { file, changed: write(file, before.text, after), events: Object.keys(groups) };
}

export function uninstallHooks(dir: string): HookInstallResult {
  const file = settingsFile(dir);
  if (!existsSync(file)) return { file, changed: false, events: [] };
  const before = readSettings(file);
  const settings = withoutBaton(before.settings);
  const removed = Object.keys(before.settings.hooks ?? {}).filter(
    (event) => JSON.stringify(before.settings.hooks?.[event]) !== JSON.stringify(settings.hooks?.[event]),
  );
  const after = `${JSON.stringify(settings, null, 2)}\n`;
  return { file, changed: write(file, before.text, after), events: removed };
}

/** The settings with every Baton hook removed, and any group or event left empty by that. */
function withoutBaton(settings: Settings): Settings {
  if (settings.hooks === undefined) return settings;
  const hooks: Record<string, MatcherGroup[]> = {};
  for (const [event, groups] of Object.entries(settings.hooks)) {
    const kept = groups.flatMap((group) => {
      const entries = (group.hooks ?? []).filter(
        (hook) => !(typeof hook.command === 'string' && OURS.test(hook.command)),
      );
      if (entries.length === (group.hooks ?? []).length) return [group];
      return entries.length === 0 ? [] : [{ ...group, hooks: entries }];
    });
    if (kept.length > 0) hooks[event] = kept;
  }
  const rest: Settings = { ...settings };
  delete rest.hooks;
  return Object.keys(hooks).length === 0 ? rest : { ...rest, hooks };
}

function readSettings(file: string): { settings: Settings; text: string | null } {
  if (!existsSync(file)) return { settings: {}, text: null };
  const text = readFileSync(file, 'utf8');
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(
      `${file} is not valid JSON (${(error as Error).message}); nothing was changed`,
      'fix the file, then run the command again',
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidInputError(
      `${file} does not hold a JSON object; nothing was changed`,
      'fix the file first',
    );
  }
  const settings = parsed as Settings;
  const hooks = settings.hooks as unknown;
  const shaped =
    hooks === undefined ||
    (typeof hooks === 'object' &&
      hooks !== null &&
      Object.values(hooks).every((groups) => Array.isArray(groups)));
  if (!shaped) {
    throw new InvalidInputError(
      `the "hooks" of ${file} are not in Claude Code's shape (event → list of matcher groups); nothing was changed`,
      'fix the file first',
    );
  }
  return { settings, text };
}

/** Writes the file whole (by rename) when it changes; true when it did. */
function write(file: string, before: string | null, after: string): boolean {
  if (before === after) return false;
  replaceConfigFile(file, after);
  return true;
}
