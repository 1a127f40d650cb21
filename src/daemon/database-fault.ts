/** Store errors in the words a fence or a kill line uses. */
import { BatonError, isCorrupt, isDiskFull } from '../core/errors.js';

/** A store error in words, naming a full disk or a damaged file as such. */
export function databaseFault(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // An engine that named the fault already says so (and which file), in its own words.
  if (error instanceof BatonError && (isDiskFull(error) || isCorrupt(error))) {
    return `${message}; ${error.hint ?? ''}`;
  }
  if (isDiskFull(error)) return `the disk is full (${message})`;
  if (isCorrupt(error)) {
    return `the database file is corrupt (${message}); restore it from a backup`;
  }
  return message;
}
