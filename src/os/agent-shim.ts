/**
 * Runs an agent command as the leader of its own process group and dies with its runner.
 *
 *   node agent-shim.js <runner-pid> <command>
 *
 * A runner killed with SIGKILL cannot clean up; without this shim its agents would live on as
 * orphans while recovery hands their task to someone else. The shim polls its parent and, once
 * the runner is gone, kills its whole group, every descendant, and every process carrying the
 * run's BATON_RUN marker (one that called setsid is in neither). It exits as the agent did: the
 * same code, or the same signal.
 *
 * Only the process-group kind of containment uses the shim; a cgroup runner has one reaper for
 * all its jobs instead (reaper.ts), and starts agents without booting Node for each.
 */
import { spawn } from 'node:child_process';
import { killAll, pidsWithEnv, treeMembers } from './process-tree.js';

const [runnerPidRaw, command] = process.argv.slice(2);
const runnerPid = Number(runnerPidRaw);
if (!Number.isInteger(runnerPid) || command === undefined) {
  process.stderr.write('usage: agent-shim <runner-pid> <command>\n');
  process.exit(2);
}

const child = spawn('/bin/sh', ['-c', command], { stdio: 'inherit' });
const marker = process.env['BATON_RUN'];
const killGroup = (): void => {
  try {
    const marked = marker === undefined || marker === '' ? [] : pidsWithEnv('BATON_RUN', marker, true);
    killAll([...treeMembers(process.pid), ...marked].filter((pid) => pid !== process.pid));
    process.kill(-process.pid, 'SIGKILL');
  } catch {
    process.exit(137);
  }
};
const watch = setInterval(() => {
  if (process.ppid !== runnerPid) killGroup();
}, 250);
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, killGroup);

child.on('exit', (code, signal) => {
  clearInterval(watch);
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
