/**
 * Prunes this host's job logs (os/log-prune.ts) when `baton up` starts and every hour after, by
 * the age and total size `--log-keep-days` and `--log-keep-mb` allow. The logs of running jobs stay.
 */
import type { Clock } from '../core/time.js';
import { pruneLogs, type LogPrunePolicy } from '../os/log-prune.js';
import { Nap } from './nap.js';

const PRUNE_INTERVAL_MS = 3600_000;
export const LOG_KEEP_DAYS_DEFAULT = 14;
export const LOG_KEEP_MB_DEFAULT = 2048;
export const LOG_KEEP_DEFAULT: LogPrunePolicy = {
  maxAgeMs: LOG_KEEP_DAYS_DEFAULT * 86_400_000,
  maxBytes: LOG_KEEP_MB_DEFAULT * 1024 * 1024,
};

export function startLogPruner(
  options: {
    readonly logDir: string;
    readonly policy?: LogPrunePolicy | undefined;
    readonly inUse: (name: string) => boolean;
  },
  clock: Clock,
  log: (line: string) => void,
  stop: AbortSignal,
): { stop: () => Promise<void> } {
  const end = new AbortController();
  const quit = (): void => end.abort();
  stop.addEventListener('abort', quit, { once: true });
  const done = (async () => {
    while (!end.signal.aborted) {
      const logs = pruneLogs(
        options.logDir,
        options.policy ?? LOG_KEEP_DEFAULT,
        clock.wallNow(),
        options.inUse,
      );
      if (logs.removed.length > 0)
        log(
          `pruned ${logs.removed.length} old job logs (${Math.round(logs.freedBytes / 1024)} KiB) ` +
            `from ${options.logDir}`,
        );
      await new Nap().sleep(clock, PRUNE_INTERVAL_MS, end.signal);
    }
  })();
  return {
    stop: async () => {
      end.abort();
      stop.removeEventListener('abort', quit);
      await done;
    },
  };
}
