/**
 * Replaces a user's config file (Claude Code's settings.json, an MCP client's config) with new
 * text, whole: written beside it, flushed and renamed over it, so a crash leaves the old file or
 * the new one, never half of each. A symbolic link (a dotfiles manager's) is followed: its target
 * is replaced and the link stays. The file keeps its permission bits: a config that holds other
 * servers' tokens at 0600 is not left readable by every user.
 */
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

export function replaceConfigFile(file: string, text: string): void {
  const target = existsSync(file) ? realpathSync(file) : file;
  const mode = existsSync(target) ? statSync(target).mode & 0o7777 : null;
  mkdirSync(dirname(target), { recursive: true });
  const tmp = `${target}.baton-${process.pid}.tmp`;
  try {
    const fd = openSync(tmp, 'w', mode ?? 0o666);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (mode !== null) chmodSync(tmp, mode); // openSync's mode passes through the umask
    renameSync(tmp, target);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw error;
  }
}
