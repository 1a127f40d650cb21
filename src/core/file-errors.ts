/**
 * Why a file could not be opened, in words, for the one-line refusals that name a file the user
 * gave (`--out`, `--file`, `--anchor`): an errno code such as ENOTDIR means little to most readers.
 */

const WORDS: Readonly<Record<string, string>> = {
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of its path is a file, not a folder',
  ENAMETOOLONG: 'its name is too long for the file system',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  ELOOP: 'its path has too many symbolic links (a loop?)',
  EMFILE: 'too many files are open',
  ENFILE: 'too many files are open',
  ETXTBSY: 'it is a program that is running',
  EBUSY: 'it is busy',
  EIO: 'the device reported an input/output error',
  EEXIST: 'it already exists',
  EINVAL: 'its name is not valid on this file system',
};

/**
 * The reason `error` (from opening a file) gives, in words; `missing` says what ENOENT means
 * where the caller stands (`it does not exist`, `its folder does not exist`). A code not listed
 * keeps the system's own words (`ECODE: words, open '…'`) with the code.
 */
export function fileErrorInWords(error: unknown, missing: string): string {
  const { code, message } = error instanceof Error ? (error as Error & { code?: unknown }) : {};
  if (code === 'ENOENT') return missing;
  if (typeof code === 'string' && WORDS[code] !== undefined) return WORDS[code];
  const words = typeof message === 'string' ? /^[A-Z0-9]+: ([^,]+)/.exec(message)?.[1] : undefined;
  if (typeof code === 'string')
    return words === undefined ? `the system refused it (${code})` : `${words} (${code})`;
  return typeof message === 'string' && message !== '' ? message : String(error);
}
