/**
 * A stand-in for Claude Code in the hooks' keeper tests: a Node process that runs one hook command
 * through `sh -c` with the hook's JSON on its stdin, as Claude Code does, then stays up until it
 * is killed, so the keeper the hook started has a parent to outlive.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Store } from '../../src/store/store.js';
import { waitUntil } from './wait.js';

/** Starts the stand-in: `command` (argv, quoted for sh here) gets `input` (the hook's JSON) on its stdin. */
export function fakeClaude(
  command: readonly string[],
  input: string,
  env: Readonly<Record<string, string | undefined>>,
): ChildProcess {
  const line = command.map((arg) => `'${arg}'`).join(' ');
  const script = [
    `const c = require('child_process').spawn('/bin/sh', ['-c', ${JSON.stringify(line)}],`,
    `  { stdio: ['pipe', 'ignore', 'inherit'] });`,
    `c.stdin.end(${JSON.stringify(input)});`,
    'setInterval(() => {}, 1000);',
  ].join('\n');
  return spawn(process.execPath, ['-e', script], { env, stdio: 'ignore' });
}

/**
 * Waits until a session claims `key` and then beats at least once after that claim (its keeper at
 * work), and answers the session's id.
 */
export async function keeperBeating(store: Store, key: string): Promise<number> {
  await waitUntil(async () => (await store.tasks.get(key))?.holder !== null, 20_000, 'the claim');
  const session = (await store.tasks.get(key))?.holder?.session ?? 0;
  const first = (await store.sessions.get(session))?.heartbeatAt ?? 0;
  await waitUntil(
    async () => ((await store.sessions.get(session))?.heartbeatAt ?? 0) > first,
    10_000,
    'a heartbeat from the keeper',
  );
  return session;
}
