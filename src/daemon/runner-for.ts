/** This host's runner (runner.ts) from `baton up`'s options. */
import { dirname, join } from 'node:path';
import { heartbeatWindows } from '../core/heartbeat-windows.js';
import { DEFAULT_RETRY_POLICY } from '../core/retry.js';
import type { SessionId } from '../core/session.js';
import type { Clock } from '../core/time.js';
import type { Containment } from '../os/containment.js';
import type { Store } from '../store/store.js';
import { DEFAULT_STALL_POLICY } from './run-progress.js';
import { Runner } from './runner.js';
import type { UpOptions } from './up.js';

/** This host's runner (runner.ts), under the daemon's session. */
export function runnerFor(
  store: Store,
  options: UpOptions,
  clock: Clock,
  log: (line: string) => void,
  session: SessionId,
  containment: Containment,
): Runner {
  return new Runner({
    store,
    clock,
    host: options.host,
    session,
    dbUrl: options.dbUrl,
    containment,
    agentEnv: options.agentEnv ?? [],
    apiUrl: options.apiUrl ?? null,
    logDir: options.logDir,
    logMaxBytes: options.logMaxBytes,
    defaultCommand: options.agentCommand,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    sampleIntervalMs: heartbeatWindows(options.heartbeatIntervalMs, options.staleAfterMs).sampleIntervalMs,
    pollIntervalMs: options.pollIntervalMs,
    staleAfterMs: options.staleAfterMs,
    cwd: options.cwd,
    worktreeDir: options.worktreeDir ?? join(dirname(options.logDir), 'worktrees'),
    policy: DEFAULT_RETRY_POLICY,
    stall: options.stall ?? DEFAULT_STALL_POLICY,
    timeLimitMs: options.timeLimitMs ?? null,
    recheck: options.recheck,
    memoryByPid: options.memoryByPid,
    agentUids: options.uids ?? null,
    log,
  });
}
