/**
 * What a key sealed last in a database, kept beside the key (`<key file>.sealed/<database>.json`,
 * one anchor line, replaced at every seal). A sealer without an anchor file used to trust the
 * database's newest checkpoint when it started: whoever owned the database could delete the newest
 * checkpoints while `baton up` was down, edit the rows they had covered, and the restarted sealer
 * signed the edit with the real key. With the record it first checks that the database still holds
 * the checkpoint it sealed last (seal.ts assertStillHolds), as it does for an anchor file.
 *
 * The record is this host's, as the key file is: another host's sealer (after a failover) keeps
 * its own, and an older record only asks for an older checkpoint, which the chain still vouches
 * for (or a prune record signed by this key stands for). It is keyed by the database as the
 * operator names it (the SQLite file's path; the PostgreSQL server, port and database), never by
 * anything the database holds, which its owner could change. A sealer with neither a record nor an
 * anchor file (the first on this host, or one whose record was removed) still trusts what it finds.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { InvalidInputError } from '../../core/errors.js';
import { fileErrorInWords } from '../../core/file-errors.js';
import type { Checkpoint } from '../../core/ledger.js';
import { parseDbUrl } from '../../store/open.js';
import { anchorOf, newestAnchored } from './anchor.js';
import type { KnownCheckpoint } from './seal.js';

/**
 * The database as its operator names it: the same file or server under any spelling of its URL.
 * Read by hand, not with `new URL`, which refuses forms libpq takes (`postgres://user@/db?host=/run`,
 * several hosts).
 */
function databaseIdentity(url: string): string {
  const target = parseDbUrl(url);
  if (target.engine === 'sqlite') return `sqlite:${resolve(target.path)}`;
  const [, servers = '', database = '', query = ''] =
    /^[^:]+:\/\/(?:[^@/?]*@)?([^/?]*)([^?]*)\??(.*)$/.exec(target.url) ?? [];
  const socket = new URLSearchParams(query).get('host');
  const withPorts = servers
    .toLowerCase()
    .split(',')
    .map((server) => (/:\d+$/.test(server) ? server : `${server}:5432`));
  return `postgres://${socket ?? withPorts.join(',')}${database}`;
}

export class SealedRecord {
  private constructor(readonly path: string) {}

  /** The record of what `keyFile` sealed in the database at `database` (a URL or path). */
  static of(keyFile: string, database: string): SealedRecord {
    const id = createHash('sha256').update(databaseIdentity(database)).digest('hex').slice(0, 16);
    return new SealedRecord(join(`${resolve(keyFile)}.sealed`, `${id}.json`));
  }

  /** The checkpoint this key sealed last in the database; null when none is recorded. */
  known(): KnownCheckpoint | null {
    let found: KnownCheckpoint | null;
    try {
      found = newestAnchored(this.path);
    } catch (error) {
      const why =
        error instanceof InvalidInputError ? 'it is not a ledger anchor' : fileErrorInWords(error, '');
      throw new InvalidInputError(
        `the record of what this ledger key sealed last, ${this.path}, cannot be read: ${why}`,
        `move it aside (the next seal writes it again); until then nothing is sealed`,
      );
    }
    return found === null ? null : { ...found, where: `sealed last with this key, recorded in ${this.path}` };
  }

  /** Records this checkpoint, sealed with the key whose public half is `publicKey`, as the last. */
  keep(checkpoint: Checkpoint, publicKey: string): void {
    const partial = `${this.path}.${process.pid}.partial`;
    try {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
      writeFileSync(partial, `${JSON.stringify(anchorOf(checkpoint, publicKey))}\n`, { mode: 0o600 });
      renameSync(partial, this.path);
    } catch (error) {
      throw new Error(
        `the ledger is sealed through checkpoint ${checkpoint.seq}, but the record of it beside the key ` +
          `(${this.path}) could not be written: ${fileErrorInWords(error, 'its folder is missing')}; ` +
          'a sealer started later trusts the database until it is',
      );
    }
  }
}

/** The newest of these known checkpoints (the highest seq): it vouches for those before it. */
export function newestKnown(...known: readonly (KnownCheckpoint | null)[]): KnownCheckpoint | null {
  return known.reduce<KnownCheckpoint | null>(
    (newest, next) => (next !== null && (newest === null || next.seq > newest.seq) ? next : newest),
    null,
  );
}
