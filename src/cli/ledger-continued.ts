/**
 * `baton audit verify`'s line about the link `baton db copy` left (docs/decisions/0049): which
 * older ledger this one continues, the checkpoint of it that the `ledger:continued` row names, and
 * how to check that ledger in its turn.
 */
import type { ContinuedLedger } from '../coordinator/ledger/verify.js';

interface NamedCheckpoint {
  readonly seq?: number;
  readonly hash?: string;
  readonly lastId?: number;
  readonly keyId?: string;
}

export function continuedLines(continues: ContinuedLedger | null): string[] {
  if (continues === null) return [];
  const from = continues.from as { database?: string } | null;
  const last = continues.checkpoint as NamedCheckpoint | null;
  const named =
    last === null
      ? 'an old ledger with no rows'
      : `checkpoint ${last.seq} (hash ${last.hash}, rows through #${last.lastId}, key ${last.keyId})`;
  return [
    `  continues (row #${continues.id}) the ledger of ${from?.database ?? '?'}: its ${named}; ` +
      'verify that ledger with `baton audit verify --file` on its export, and compare its last checkpoint',
  ];
}
