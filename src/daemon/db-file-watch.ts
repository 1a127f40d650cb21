/**
 * `baton up` on SQLite holds its database file open. Should that file be deleted or replaced
 * underneath it (`rm .baton/baton.db*`, a restore copied over it), the daemon would go on
 * writing to a file no path names, while every new CLI call opened, or made, another database
 * that nobody serves: the cluster split silently (issue 14, item 9). The watch compares the
 * path's device and inode with those of the file opened, every interval, and reports the first
 * difference as one clear error.
 */
import { statSync } from 'node:fs';
import { ConflictError } from '../core/errors.js';

interface FileIdentity {
  readonly dev: number;
  readonly ino: number;
}

function identityOf(path: string): FileIdentity | null {
  try {
    const stats = statSync(path);
    return { dev: stats.dev, ino: stats.ino };
  } catch {
    return null;
  }
}

/** Calls `lost` once, with the error to stop on, when `path` no longer names the file it named at the start. */
export function watchDbFile(
  path: string,
  intervalMs: number,
  lost: (error: ConflictError) => void,
): { stop: () => void } {
  const opened = identityOf(path);
  if (opened === null) return { stop: () => undefined };
  const timer = setInterval(() => {
    const now = identityOf(path);
    if (now !== null && now.dev === opened.dev && now.ino === opened.ino) return;
    clearInterval(timer);
    lost(
      new ConflictError(
        `the database file ${path} was ${now === null ? 'deleted' : 'replaced'} while baton up had it open`,
        'stopped so that no work goes to a database nobody else reads; restore the file, ' +
          'or start baton up again to serve the one at that path',
      ),
    );
  }, intervalMs);
  return { stop: () => clearInterval(timer) };
}

/**
 * Calls `lost` once when another process migrates the database past the schema this code knows
 * (issue 14, item 10): a newer `baton up` or `baton db migrate` may add rules this process would
 * break by writing on. Checked every interval with one read; an unreachable database is left to
 * the heartbeats.
 */
export function watchSchema(
  schema: () => Promise<{ readonly applied: number; readonly known: number }>,
  intervalMs: number,
  lost: (error: ConflictError) => void,
): { stop: () => void } {
  let busy = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (busy || stopped) return;
    busy = true;
    schema()
      .then(({ applied, known }) => {
        if (applied <= known || stopped) return;
        stopped = true;
        clearInterval(timer);
        lost(
          new ConflictError(
            `the database's schema moved to version ${applied} while baton up ran, ` +
              `newer than this baton knows (${known})`,
            'stopped so that it writes nothing under rules it does not know; upgrade baton on this host ' +
              '(git pull && npm ci && npm run build) and start it again',
          ),
        );
      })
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, intervalMs);
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
