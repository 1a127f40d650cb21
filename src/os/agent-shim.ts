/**
 * Runs an agent command as the leader of its own process group and dies with its runner.
 *
 *   node agent-shim.js <runner-pid> <deadline-ms> <command>
 *
 * A runner killed with SIGKILL cannot clean up; without this shim its agents would live on as
 * orphans while recovery hands their task to someone else. The shim polls its parent and, once
 * the runner is gone, kills its whole group, every descendant, and every process carrying the
 * run's BATON_RUN marker (one that called setsid is in neither). It exits as the agent did: the
 * same code, or the same signal.
 *
 * A runner that stops running without dying (SIGSTOP, a long GC pause, swapped out) cannot kill
 * its agents either. With a deadline above 0, its stdin is a pipe on which the runner pings it
 * (watchdog.ts): with no ping for the deadline, or the pipe closed, the shim kills the same way,
 * says why on stderr (the job's log) and exits with SILENT_RUNNER_EXIT.
 *
 * Only the process-group kind of containment uses the shim; a cgroup runner has one reaper for
 * all its jobs instead (reaper.ts, which keeps the same watchdog), and starts agents without
 * booting Node for each.
 */
import { spawn } from 'node:child_process';
import { killAll, pidsWithEnv, treeMembers } from './process-tree.js';
import { SILENT_RUNNER_EXIT } from './watchdog.js';

const [runnerPidRaw, deadlineRaw, command] = process.argv.slice(2);
const runnerPid = Number(runnerPidRaw);
const deadlineMs = Number(deadlineRaw);
if (!Number.isInteger(runnerPid) || !(deadlineMs >= 0) || command === undefined) {
  process.stderr.write('usage: agent-shim <runner-pid> <deadline-ms> <command>\n');
  process.exit(2);
}

const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'inherit', 'inherit'] });
const marker = process.env['BATON_RUN'];
/** The agent's processes, without the shim: its group and tree, and those carrying the run's marker. */
const agentProcesses = (): number[] => {
  const marked = marker === undefined || marker === '' ? [] : pidsWithEnv('BATON_RUN', marker, true);
  return [...treeMembers(process.pid), ...marked].filter((pid) => pid !== process.pid);
};
const killGroup = (): void => {
  try {
    killAll(agentProcesses());
    process.kill(-process.pid, 'SIGKILL');
  } catch {
    process.exit(137);
  }
};
const watch = setInterval(() => {
  if (process.ppid !== runnerPid) killGroup();
}, 250);
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, killGroup);

let pingedAt = performance.now();
let silenced = false;
/** No ping for the deadline: the agent is killed (round after round: one may fork meanwhile). */
const silent = async (): Promise<void> => {
  silenced = true;
  const seconds = ((performance.now() - pingedAt) / 1000).toFixed(1);
  process.stderr.write(`baton: agent killed: its runner (pid ${runnerPid}) was silent for ${seconds} s\n`);
  for (let round = 0; round < 50 && killAll(agentProcesses()) > 0; round++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  process.exit(SILENT_RUNNER_EXIT);
};
const pinged =
  deadlineMs === 0
    ? null
    : setInterval(
        () => {
          if (performance.now() - pingedAt <= deadlineMs) return;
          // Judged after the pings that came in meanwhile are read: a shim that did not run for a
          // while runs its due timers before it reads its pipe (as pending-io.ts says of the runner).
          setImmediate(() => {
            if (performance.now() - pingedAt <= deadlineMs || pinged === null) return;
            clearInterval(pinged);
            void silent();
          });
        },
        Math.min(100, deadlineMs),
      );
if (pinged !== null) {
  process.stdin.on('data', () => (pingedAt = performance.now()));
  // The pipe closed: the runner is gone, as when the shim's parent changes.
  process.stdin.on('end', killGroup);
  process.stdin.on('error', killGroup);
}

child.on('exit', (code, signal) => {
  clearInterval(watch);
  if (silenced) return; // silent() exits once the rest is dead too
  if (pinged !== null) clearInterval(pinged);
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
