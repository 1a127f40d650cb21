/**
 * The reaper: one small shell process per runner that kills the runner's job cgroups when the
 * runner dies, however it dies. It reads its stdin, a pipe only the runner holds open; a runner
 * that exits (or is SIGKILLed, or OOM-killed) closes it, and the read returns. The reaper then
 * freezes, kills and removes every cgroup under the runner's bases. It runs in a session of its
 * own and ignores the terminal's signals, so a Ctrl-C meant for `baton up` does not take it first.
 *
 * It is also the watchdog of the runner's agents (watchdog.ts): the runner writes it a line at
 * least every half heartbeat interval, and each read is given the deadline (by timeout(1), which
 * dash's `read` lacks: one short process per ping); a read that times out means a runner that
 * stopped running (SIGSTOP, a long GC pause, swapped out), so the reaper kills every job cgroup
 * then, before recovery can hand their work on, and keeps reading: a runner that wakes finds its
 * agents dead and fences itself. Without timeout(1) it watches only for the runner's end.
 *
 * This is what lets a cgroup runner start agents without a watcher per agent (the Node shim the
 * process-group kind still needs): one `sh` per runner instead of one Node per agent.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';

const SCRIPT = `
trap '' HUP INT TERM QUIT PIPE
timeout=$1 deadline=$2
shift 2
sweep() {
  i=0
  while [ $i -lt 100 ]; do
    left=
    for base in "$@"; do
      [ -w "$base/cgroup.kill" ] && echo 1 > "$base/cgroup.kill" 2>/dev/null
      for s in "$base"/*/freezer.state; do [ -w "$s" ] && echo FROZEN > "$s"; done 2>/dev/null
      for p in $(procs "$base"); do kill -9 "$p" 2>/dev/null; left=1; done
      for s in "$base"/*/freezer.state; do [ -w "$s" ] && echo THAWED > "$s"; done 2>/dev/null
    done
    [ -z "$left" ] && break
    sleep 0.05
    i=$((i+1))
  done
}
procs() { for f in "$1"/cgroup.procs "$1"/*/cgroup.procs; do [ -r "$f" ] && cat "$f"; done 2>/dev/null; }
while [ -n "$timeout" ]; do
  "$timeout" -s KILL "$deadline" /bin/sh -c 'read -r _ignored'
  case $? in
    0) ;;
    1) break ;;
    124|137) sweep "$@" ;;
    *) timeout= ;;
  esac
done
[ -n "$timeout" ] || while read -r _ignored; do :; done
sweep "$@"
for base in "$@"; do
  for d in "$base"/*/; do rmdir "$d" 2>/dev/null; done
  rmdir "$base" 2>/dev/null
done
exit 0
`;

export interface Reaper {
  readonly pid: number;
  /** The pipe the runner pings it on (watchdog.ts), when it has a deadline; else null. */
  readonly pings: Writable | null;
  /** Asks the reaper to sweep now and waits (bounded) until it has. */
  stop(): Promise<void>;
}

/** timeout(1) by its absolute path, or null where this host has none. */
function findTimeout(): string | null {
  return ['/usr/bin', '/bin'].map((dir) => join(dir, 'timeout')).find((path) => existsSync(path)) ?? null;
}

/**
 * Starts the reaper for the runner's cgroup bases; with `deadlineMs`, it also kills them when no
 * ping comes for that long (where the host has timeout(1)).
 */
export function startReaper(bases: readonly string[], deadlineMs: number | null = null): Reaper {
  const timeout = deadlineMs === null ? null : findTimeout();
  const limit = deadlineMs === null ? '0' : (deadlineMs / 1000).toFixed(3);
  const args = ['-c', SCRIPT, 'baton-reaper', timeout ?? '', limit, ...bases];
  const child: ChildProcess = spawn('/bin/sh', args, {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  // Neither the child nor our end of its pipe may keep `baton up` alive.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  child.stdin?.on('error', () => {});
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  return {
    pid: child.pid ?? 0,
    pings: timeout === null ? null : child.stdin,
    stop: async () => {
      // Waited for, so held again: an unref'd child and timer would let the process end mid-wait.
      child.ref();
      child.stdin?.end();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
    },
  };
}
