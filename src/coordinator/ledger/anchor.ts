/**
 * Anchors: checkpoints copied outside the database (a file, a git note, a printout), so that a
 * consistent rewrite of the whole ledger and its checkpoints, re-signed with a key of the
 * attacker's, is still caught: the anchored hash no longer matches, or the key is not the pinned
 * one. A checkpoint's hash covers every checkpoint before it, so the newest anchor vouches for the
 * whole ledger up to it; an anchor file keeps one line per checkpoint, to name the first that moved.
 */
import {
  accessSync,
  appendFileSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { InvalidInputError } from '../../core/errors.js';
import { fileErrorInWords } from '../../core/file-errors.js';
import type { Checkpoint } from '../../core/ledger.js';
import type { LedgerVerifier } from '../../core/ledger-verify.js';
import type { KnownKey } from './keys.js';
import type { KnownCheckpoint } from './seal.js';

export interface Anchor {
  readonly format: 'baton-ledger-anchor';
  readonly seq: number;
  readonly kind: Checkpoint['kind'];
  readonly hash: string;
  readonly firstId: number;
  readonly lastId: number;
  readonly sealedAt: string;
  readonly keyId: string;
  readonly publicKey: string;
}

export function anchorOf(checkpoint: Checkpoint, publicKey: string): Anchor {
  const { seq, kind, hash, firstId, lastId, keyId } = checkpoint;
  const sealedAt = new Date(checkpoint.sealedAt).toISOString();
  return { format: 'baton-ledger-anchor', seq, kind, hash, firstId, lastId, sealedAt, keyId, publicKey };
}

/**
 * Refuses an anchor file that cannot be appended to, before anything is sealed or pruned: a
 * checkpoint committed without its anchor line would leave a gap that no later seal fills. The file
 * itself when it exists, else the nearest folder above it that exists; nothing is made.
 */
export function checkAnchorFile(path: string, flag: string): void {
  const refuse = (why: string): never => {
    throw new InvalidInputError(
      `${flag} ${path} cannot be written: ${why}`,
      'name a file in a folder you can write (keep it outside the database)',
    );
  };
  let at = path;
  for (;;) {
    const found = statOf(at);
    if (found === 'missing') {
      if (dirname(at) === at) refuse('no folder above it exists');
      at = dirname(at);
      continue;
    }
    if (at === path && found === 'folder') refuse('it is a folder');
    if (at !== path && found !== 'folder') refuse(`${at} is not a folder`);
    try {
      accessSync(at, constants.W_OK);
    } catch (error) {
      refuse(`${at}: ${fileErrorInWords(error, 'it does not exist')}`);
    }
    return;
  }
}

function statOf(path: string): 'missing' | 'folder' | 'file' {
  try {
    return statSync(path).isDirectory() ? 'folder' : 'file';
  } catch (error) {
    // ENOTDIR: a file stands where a folder of the path should be; the walk up names it.
    if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return 'missing';
    throw error;
  }
}

/**
 * Makes the folder and any missing above it, one level at a time: Node 20's recursive mkdir never
 * returns for a path under /proc (it retries the ENOENT for ever), which would hang `baton up`.
 */
function makeFolder(dir: string): void {
  if (existsSync(dir)) return;
  makeFolder(dirname(dir));
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Appends one line per anchor to the file (made if absent, with its folder). */
export function appendAnchors(path: string, anchors: readonly Anchor[]): void {
  if (anchors.length === 0) return;
  makeFolder(dirname(path));
  appendFileSync(path, anchors.map((anchor) => `${JSON.stringify(anchor)}\n`).join(''));
}

export function readAnchors(path: string): Anchor[] {
  if (!existsSync(path)) {
    throw new InvalidInputError(
      `the anchor file ${path} does not exist`,
      'pass the file `baton audit seal --anchor` wrote',
    );
  }
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => anchorOfLine(line, `${path}:${index + 1}`));
}

function anchorOfLine(line: string, where: string): Anchor {
  try {
    const anchor = JSON.parse(line) as Partial<Anchor>;
    if (
      anchor.format === 'baton-ledger-anchor' &&
      typeof anchor.seq === 'number' &&
      typeof anchor.hash === 'string'
    )
      return anchor as Anchor;
  } catch {
    // reported below
  }
  throw new InvalidInputError(
    `${where} is not a ledger anchor`,
    'pass a file written by `baton audit seal --anchor`',
  );
}

/** Bytes read from an anchor file's end for its newest line: dozens of lines of some 400 bytes. */
const TAIL_BYTES = 16_384;

/**
 * The checkpoint of an anchor file's newest line, which the ledger must still hold before anything
 * is signed over it (seal.ts assertStillHolds); null while the file is absent or empty. Reads only
 * the file's end: a long-running sealer's file grows by a line per checkpoint.
 */
export function newestAnchored(path: string): KnownCheckpoint | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return null; // not an anchor file: appending to it fails and says so
    const size = stat.size;
    const tail = Buffer.alloc(Math.min(size, TAIL_BYTES));
    readSync(fd, tail, 0, tail.length, size - tail.length);
    const lines = tail.toString('utf8').split('\n');
    const last = lines.findLast((line, index) => line.trim() !== '' && (index > 0 || tail.length === size));
    if (last === undefined) return null;
    const anchor = anchorOfLine(last, `the last line of ${path}`);
    return {
      seq: anchor.seq,
      hash: anchor.hash,
      where: `anchored in ${path}`,
      keys: [{ id: anchor.keyId, publicKey: anchor.publicKey }],
    };
  } finally {
    closeSync(fd);
  }
}

/** The keys the anchors were signed with: an auditor's pinned keys. */
export function anchorKeys(anchors: readonly Anchor[]): KnownKey[] {
  const keys = new Map(
    anchors.map((anchor) => [anchor.keyId, { id: anchor.keyId, publicKey: anchor.publicKey }]),
  );
  return [...keys.values()];
}

/** Reports, through the verifier, every anchored checkpoint that no longer matches. */
export function checkAnchors(verifier: LedgerVerifier, anchors: readonly Anchor[]): void {
  const seen = verifier.seen;
  const prunes = [...seen.values()].filter((checkpoint) => checkpoint.kind === 'prune');
  const removedThrough = Math.max(0, ...prunes.map((prune) => prune.throughSeq ?? 0));
  let matchedThrough = 0;
  for (const anchor of [...anchors].sort((left, right) => left.seq - right.seq)) {
    const at = `anchored ${anchor.sealedAt}`;
    const checkpoint = seen.get(anchor.seq);
    if (checkpoint !== undefined) {
      if (checkpoint.hash === anchor.hash) matchedThrough = Math.max(matchedThrough, anchor.lastId);
      else
        verifier.report(
          matchedThrough + 1,
          'edited',
          anchor.seq,
          `checkpoint ${anchor.seq} no longer matches its anchor (${at})`,
        );
    } else if (anchor.seq <= removedThrough) {
      const attest = prunes.find((prune) => prune.throughSeq === anchor.seq);
      if (attest !== undefined && attest.root !== anchor.hash) {
        verifier.report(
          anchor.firstId,
          'edited',
          attest.seq,
          `prune record ${attest.seq} attests another checkpoint ${anchor.seq} than the one ${at}`,
        );
      }
    } else {
      // The rows it covered are gone from firstId on; rows before it may be sealed by checkpoints
      // that were never anchored (anchoring started after the first seal), and they are intact.
      verifier.report(anchor.firstId, 'missing', anchor.seq, `checkpoint ${anchor.seq} (${at}) is missing`);
    }
  }
}
