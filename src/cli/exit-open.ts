/**
 * A CLI process on SQLite ends without closing its database (issue 22, item 4; docs/decisions/0007).
 * Closing the last connection checkpoints the WAL into the file, syncs both and deletes the WAL
 * and its index, and the next call creates them again: four fsyncs (one of the folder) and two
 * unlinks per call on top of the commit's own. A process that ends with the database open leaves
 * the WAL, whose commits are already on disk (`synchronous = FULL` syncs each one), for the next
 * opener to read back: the path SQLite takes after a crash, which it is built for. better-sqlite3
 * closes every database still open in a cleanup hook that a normal exit runs and process.exit()
 * does not, so a process that leaves its store open ends by process.exit() (src/cli/launch.ts),
 * which also skips freeing the heap. Only the process entry (main) allows it: runCli called in a
 * test's process closes every store as before.
 */
let processEndsAfterCommand = false;
let exitNow = false;

/** Said by the process entry: the process ends when the command does. */
export function endProcessAfterCommand(): void {
  processEndsAfterCommand = true;
}

/**
 * Said by a command whose work on the store succeeded: true when the process ends with it, by
 * process.exit(), and so a SQLite store may be left open. Whatever the engine, nothing of the
 * command's is left to run then, and freeing the heap as a normal exit does is work for no one.
 */
export function commandDone(): boolean {
  exitNow ||= processEndsAfterCommand;
  return exitNow;
}

/** Whether the process must end by process.exit(), so that no cleanup hook closes the store. */
export function exitWithoutCleanup(): boolean {
  return exitNow;
}
