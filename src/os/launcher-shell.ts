/**
 * The launcher's process (launcher.ts): one `sh` that runs each line the runner writes it, with
 * an empty environment and in a session of its own. Its stdout is the pipe on which it and the
 * watchers it forks answer, one line each: `f <id>` (a FIFO made), `p <id> <pid>` (an agent
 * forked), `x <id> <status>` (an agent ended).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';

/**
 * One line read, one line run; NL lets a quoted value hold a newline inside a one-line request.
 * At EOF (the runner closed the pipe, or died) it removes its FIFOs' directory ($2, by rm at $1).
 */
const SCRIPT = `NL='
'
while IFS= read -r line; do eval "$line"; done
exec "$1" -rf -- "$2"`;

export const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One shell word holding `value` exactly (a newline through the launcher's NL). */
export function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`).replace(/\n/g, `'"$NL"'`)}'`;
}

/** The status `wait` gives (128 + n for a signal) as spawn() reports it. */
export function exitOf(status: number): { code: number | null; signal: NodeJS.Signals | null } {
  if (status <= 128) return { code: status, signal: null };
  const entry = Object.entries(osConstants.signals).find(([, signalNumber]) => signalNumber === status - 128);
  return entry === undefined
    ? { code: status, signal: null }
    : { code: null, signal: entry[0] as NodeJS.Signals };
}

/** The programs the launcher runs by absolute path (its own environment is empty). */
export interface Tools {
  readonly mkfifo: string;
  readonly setsid: string;
  readonly rm: string;
}

export function findTools(): Tools | null {
  const find = (name: string): string | undefined =>
    ['/usr/bin', '/bin'].map((dir) => join(dir, name)).find((path) => existsSync(path));
  const [mkfifo, setsid, rm] = ['mkfifo', 'setsid', 'rm'].map(find);
  return mkfifo === undefined || setsid === undefined || rm === undefined ? null : { mkfifo, setsid, rm };
}

/** One launcher process and what it is running. */
export class Shell {
  readonly child: ChildProcess;
  private buffered = '';
  private fifos = new Map<number, (ok: boolean) => void>();

  constructor(
    private readonly tools: Tools,
    dir: string,
    private readonly onLine: (kind: string, id: number, value: number) => void,
    private readonly onGone: () => void,
  ) {
    this.child = spawn('/bin/sh', ['-c', SCRIPT, 'baton-launcher', tools.rm, dir], {
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore'],
      env: {},
    });
    this.child.unref();
    this.child.stdin?.on('error', () => {});
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.pipe()?.unref();
    this.child.stdout?.setEncoding('utf8');
    this.child.stdout?.on('data', (text: string) => this.read(text));
    this.child.once('exit', () => this.gone());
    this.child.once('error', () => this.gone());
  }

  alive = true;
  private busy = 0;

  /** The launcher's stdout, a socket (spawn's stdio pipes are): ref'd only while answers are due. */
  private pipe(): Socket | null {
    return this.child.stdout instanceof Socket ? this.child.stdout : null;
  }

  /** Holds the event loop open while an answer is awaited (an idle launcher holds nothing). */
  hold(): void {
    if (this.busy++ === 0) this.pipe()?.ref();
  }

  release(): void {
    if (--this.busy === 0) this.pipe()?.unref();
  }

  private gone(): void {
    if (!this.alive) return;
    this.alive = false;
    for (const answer of [...this.fifos.values()]) answer(false);
    this.onGone();
  }

  private read(text: string): void {
    this.buffered += text;
    let end: number;
    while ((end = this.buffered.indexOf('\n')) !== -1) {
      const [kind = '', id = '', value = ''] = this.buffered.slice(0, end).split(' ');
      this.buffered = this.buffered.slice(end + 1);
      if (kind === 'f' || kind === 'F') {
        this.fifos.get(Number(id))?.(kind === 'f');
      } else {
        this.onLine(kind, Number(id), Number(value));
      }
    }
  }

  send(line: string): boolean {
    if (!this.alive || this.child.stdin === null) return false;
    this.child.stdin.write(`${line}\n`);
    return true;
  }

  /** Makes the FIFOs `paths` (answered by id); false when it could not. */
  mkfifo(id: number, paths: readonly string[]): Promise<boolean> {
    this.hold();
    return new Promise((resolve) => {
      this.fifos.set(id, (ok) => {
        this.fifos.delete(id);
        this.release();
        resolve(ok);
      });
      const make = `${quote(this.tools.mkfifo)} -m 600 ${paths.map(quote).join(' ')} 2>/dev/null`;
      // The answer is written from a subshell that ignores SIGPIPE: a runner that died before it
      // read the answer must not kill the launcher, which then reads EOF and removes its directory
      // (the launcher itself keeps SIGPIPE's default, which the agents it forks inherit).
      const line = `${make} && ( trap '' PIPE; echo "f ${id}" ) || ( trap '' PIPE; echo "F ${id}" )`;
      if (!this.send(line)) this.fifos.get(id)?.(false);
    });
  }
}
