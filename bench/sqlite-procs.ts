/**
 * Runs SQLite bench processes side by side (sqlite-worker.ts): forks them, waits until every one
 * is ready, releases them together, and times the whole from the first one's start of work to
 * the last one's end (clocks: performance.timeOrigin + now(), shared by processes on one host).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage } from './sqlite-worker.js';

const WORKER = fileURLToPath(new URL('./sqlite-worker.js', import.meta.url));

export interface ProcsResult {
  readonly count: number;
  readonly seconds: number;
  readonly perProcess: readonly number[];
}

export async function runSqliteProcs(
  argsFor: (i: number) => string[],
  processes: number,
): Promise<ProcsResult> {
  const children: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  const done: Promise<Extract<ChildMessage, { type: 'done' }>>[] = [];
  for (let index = 0; index < processes; index++) {
    const child = fork(WORKER, argsFor(index), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`bench: sqlite worker ${index} exited with ${code}`))),
    );
    ready.push(Promise.race([exited, messageOf(child, 'ready').then(() => undefined)]));
    done.push(Promise.race([exited, messageOf(child, 'done')]));
    // The exit rejection is expected once the work is done: keep it from going unhandled.
    exited.catch(() => undefined);
  }
  try {
    await Promise.all(ready);
    for (const child of children) child.send({ type: 'go' });
    const results = await Promise.all(done);
    const first = Math.min(...results.map((result) => result.firstAt).filter((at) => Number.isFinite(at)));
    const end = Math.max(...results.map((result) => result.endAt));
    const perProcess = results.map((result) => result.count);
    return {
      count: perProcess.reduce((sum, part) => sum + part, 0),
      seconds: (end - first) / 1000,
      perProcess,
    };
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

function messageOf<T extends ChildMessage['type']>(
  child: ChildProcess,
  type: T,
): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve) => {
    const on = (message: ChildMessage): void => {
      if (message.type !== type) return;
      child.off('message', on);
      resolve(message as Extract<ChildMessage, { type: T }>);
    };
    child.on('message', on);
  });
}
