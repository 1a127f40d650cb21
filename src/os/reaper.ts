/**
 * The reaper: one small shell process per runner that kills the runner's job cgroups when the
 * runner dies, however it dies. It reads its stdin, a pipe only the runner holds open; a runner
 * that exits (or is SIGKILLed, or OOM-killed) closes it, and the read returns. The reaper then
 * freezes, kills and removes every cgroup under the runner's bases. It runs in a session of its
 * own and ignores the terminal's signals, so a Ctrl-C meant for `baton up` does not take it first.
 *
 * This is what lets a cgroup runner start agents without a watcher per agent (the Node shim the
 * process-group kind still needs): one `sh` per runner instead of one Node per agent.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const SCRIPT = `
trap '' HUP INT TERM QUIT PIPE
read -r _ignored
procs() { for f in "$1"/cgroup.procs "$1"/*/cgroup.procs; do [ -r "$f" ] && cat "$f"; done 2>/dev/null; }
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
for base in "$@"; do
  for d in "$base"/*/; do rmdir "$d" 2>/dev/null; done
  rmdir "$base" 2>/dev/null
done
exit 0
`;

export interface Reaper {
  readonly pid: number;
  /** Asks the reaper to sweep now and waits (bounded) until it has. */
  stop(): Promise<void>;
}

/** Starts the reaper for the runner's cgroup bases. */
export function startReaper(bases: readonly string[]): Reaper {
  const child: ChildProcess = spawn('/bin/sh', ['-c', SCRIPT, 'baton-reaper', ...bases], {
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
