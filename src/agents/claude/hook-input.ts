/**
 * Claude Code's hook input: one JSON object on stdin. Every event carries session_id,
 * transcript_path, cwd and hook_event_name; SessionStart adds source (startup, resume, clear,
 * compact), PreToolUse and PostToolUse add tool_name and tool_input (PostToolUse also
 * tool_response), Stop adds stop_hook_active and SessionEnd a reason. Read as Claude Code 2.1
 * documents and sends it; unknown fields are ignored.
 */
import { InvalidInputError } from '../../core/errors.js';

/** `baton hook <event>` names, and the Claude Code event each one serves. */
export const HOOK_EVENTS = {
  'session-start': 'SessionStart',
  'pre-tool': 'PreToolUse',
  'post-tool': 'PostToolUse',
  stop: 'Stop',
  'session-end': 'SessionEnd',
} as const;
export type HookCommand = keyof typeof HOOK_EVENTS;
export type ClaudeEvent = (typeof HOOK_EVENTS)[HookCommand];

export interface HookInput {
  readonly event: ClaudeEvent;
  /** Claude Code's own session id (a UUID). */
  readonly sessionId: string;
  readonly cwd: string;
  readonly toolName: string | null;
  readonly toolInput: unknown;
  /** SessionStart: startup, resume, clear or compact. */
  readonly source: string | null;
}

export function isHookCommand(name: string): name is HookCommand {
  return Object.hasOwn(HOOK_EVENTS, name);
}

/** Parses the JSON Claude Code wrote on stdin for `command`; InvalidInputError when it is not that. */
export function parseHookInput(command: HookCommand, text: string): HookInput {
  const event = HOOK_EVENTS[command];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new InvalidInputError(
      `baton hook ${command} expects Claude Code's ${event} JSON on stdin, got ${JSON.stringify(text.slice(0, 80))}`,
      'run it from a Claude Code hook (baton hooks install claude)',
    );
  }
  const input = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const field = (name: string): string | null => (typeof input[name] === 'string' ? input[name] : null);
  const sessionId = field('session_id');
  if (sessionId === null || !/^[A-Za-z0-9_.-]{1,200}$/.test(sessionId)) {
    throw new InvalidInputError(
      `the ${event} input has no usable session_id`,
      'run it from a Claude Code hook (baton hooks install claude)',
    );
  }
  const named = field('hook_event_name');
  if (named !== null && named !== event) {
    throw new InvalidInputError(
      `baton hook ${command} serves ${event}, but Claude Code sent ${named}`,
      'reinstall the hooks with `baton hooks install claude`',
    );
  }
  return {
    event,
    sessionId,
    cwd: field('cwd') ?? process.cwd(),
    toolName: field('tool_name'),
    toolInput: input['tool_input'] ?? null,
    source: field('source'),
  };
}
