/**
 * The real Claude Code CLI (the @anthropic-ai/claude-code package), run offline against the
 * scripted model server: nothing leaves the machine (ANTHROPIC_BASE_URL is local, telemetry and
 * nonessential traffic off, a throwaway HOME). Permissions come from --allowedTools, which works
 * as root, where --dangerously-skip-permissions is refused.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './cli.js';

export const CLAUDE_CLI = join(repoRoot(), 'node_modules', '@anthropic-ai', 'claude-code', 'cli.js');

export interface ClaudeRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment of an offline run: the parent's PATH and the like, none of its BATON_ or CLAUDE settings. */
export function offlineEnv(modelUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(BATON_|ANTHROPIC_|CLAUDE)/.test(name)) env[name] = value;
  }
  return {
    ...env,
    HOME: mkdtempSync(join(tmpdir(), 'baton-claude-home-')),
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: 'sk-ant-offline-test',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...extra,
  };
}

/** `claude -p <prompt> --output-format json` in `cwd`, allowed to read, write, edit and run commands. */
export function runClaude(cwd: string, prompt: string, env: NodeJS.ProcessEnv): Promise<ClaudeRun> {
  const args = [
    CLAUDE_CLI,
    '-p',
    prompt,
    '--output-format',
    'json',
    '--allowedTools',
    'Read,Edit,Write,Bash',
  ];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
