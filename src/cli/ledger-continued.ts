/**
 * `baton audit verify`'s line about the link `baton db copy` left (docs/decisions/0049): which
 * older ledger this one continues, the checkpoint of it that the `ledger:continued` row names, and
 * how to check that ledger in its turn.
 */
import type { PreviousCheck } from '../coordinator/ledger/previous.js';
import type { ContinuedLedger } from '../coordinator/ledger/verify.js';
import { rowsText } from '../core/text.js';

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
      'check that this ledger continues it with `baton audit verify --previous` and its export',
  ];
}

/** `baton audit verify --previous`'s lines: the old ledger checked, and how this one continues it. */
export function previousLines(check: PreviousCheck, continues: ContinuedLedger | null): string[] {
  const through = check.checkpoint === null ? 'no checkpoint' : `checkpoint ${check.checkpoint.seq}`;
  const pruned =
    check.prunedHere === 0 ? '' : `; ${check.prunedHere} of them pruned here since, not compared`;
  const keys = check.keys === 'pinned' ? 'the pinned keys' : 'its own keys';
  if (check.ok) {
    return [
      `  previous ledger: verifies (with ${keys}), its last checkpoint (${through}) is the one row ` +
        `#${continues?.id} names, and its ${rowsText(check.rows)} are rows here, unchanged${pruned}`,
    ];
  }
  const more = check.problemCount - check.problems.length;
  return [
    `  previous ledger NOT continued intact: ${check.problemCount} problem${check.problemCount === 1 ? '' : 's'}` +
      ` (old ledger checked with ${keys})`,
    ...check.problems.map(
      (bad) => `    ${bad.id === null ? 'ledger' : `row ${bad.id}`} ${bad.problem}: ${bad.detail}`,
    ),
    ...(more > 0 ? [`    … and ${more} more (--json lists the first ${check.problems.length})`] : []),
  ];
}
