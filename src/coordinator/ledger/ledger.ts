/**
 * The ledger's use cases for the adapters: keys, sealing, verifying, exporting, pruning, commit
 * provenance and the session report. Raw input is checked here (inputs.ts style) before it reaches
 * the store.
 */
import { InvalidInputError } from '../../core/errors.js';
import type { SessionReport } from '../../core/session-report.js';
import type { Actor } from '../../core/task.js';
import type { Instant } from '../../core/time.js';
import { validateId, validateKey, validateName } from '../../core/validate.js';
import type { KeyRetirement, LedgerKey } from '../../store/ledger-store.js';
import type { Store } from '../../store/store.js';
import { auditCommits, type CommitAuditParams, type CommitCheck } from '../commit-audit.js';
import { anchorOf, type Anchor } from './anchor.js';
import { ledgerEvents, type LedgerEvent, type LedgerFilter } from './events.js';
import type { LedgerSigner } from './keys.js';
import { pruneLedger, type PruneResult } from './prune.js';
import { keyRetirements } from './retire.js';
import { assertKeyUsable, sealLedger, type KnownCheckpoint, type SealResult } from './seal.js';
import { verifyEvents, withoutHeader, type VerifyParams, type VerifyReport } from './verify.js';

export interface ExportFilterInput {
  readonly task?: string | undefined;
  readonly session?: string | number | undefined;
  readonly host?: string | undefined;
  readonly kind?: string | undefined;
  readonly since?: Instant | undefined;
  readonly until?: Instant | undefined;
}

export class Ledger {
  constructor(private readonly store: Store) {}

  /** Registers the signer's public key (`baton ledger init`), naming who asked in the ledger. */
  addKey(signer: LedgerSigner, by?: Actor): Promise<LedgerKey> {
    return this.store.ledger.addKey({ id: signer.keyId, publicKey: signer.publicKey, actor: by?.name });
  }

  /** Retires a key (`baton ledger retire`): from its `ledger:key-retired` row on, it signs nothing. */
  retireKey(keyId: string, by?: Actor): Promise<KeyRetirement> {
    return this.store.ledger.retireKey({ id: validateKeyId(keyId), actor: by?.name });
  }

  keys(): Promise<readonly LedgerKey[]> {
    return this.store.ledger.keys();
  }

  /** Each retired key's `ledger:key-retired` row id, read from the ledger's rows. */
  retirements(): Promise<ReadonlyMap<string, number>> {
    return keyRetirements(this.store);
  }

  /** Seals what is settled; `follows`: a checkpoint the ledger must still hold (an anchor file's newest). */
  async seal(signer: LedgerSigner, follows?: KnownCheckpoint): Promise<SealResult> {
    await assertKeyUsable(this.store, signer);
    return sealLedger(this.store, signer, follows === undefined ? {} : { follows });
  }

  /** Verifies the database's ledger; `onRows` is told of each page of rows read (a progress bar). */
  async verify(
    params: VerifyParams = {},
    onRows?: (count: number) => void,
  ): Promise<VerifyReport & { readonly engine: string | null }> {
    const report = await verifyEvents(ledgerEvents(this.store), params, onRows);
    // The engine the rows were read from, as an export's header names it (`--json` says it either way).
    return { ...withoutHeader(report), engine: report.header?.engine ?? null };
  }

  /** The newest checkpoint as an anchor; null while nothing is sealed. */
  async newestAnchor(): Promise<Anchor | null> {
    const keys = await this.store.ledger.keys();
    let newest = null;
    for (let after = 0; ;) {
      const page = await this.store.ledger.checkpoints({ afterSeq: after, limit: 500 });
      newest = page.at(-1) ?? newest;
      if (page.length < 500 || newest === null) break;
      after = newest.seq;
    }
    if (newest === null) return null;
    const key = keys.find((known) => known.id === newest.keyId);
    return anchorOf(newest, key?.publicKey ?? '');
  }

  events(input: ExportFilterInput = {}): AsyncGenerator<LedgerEvent> {
    return ledgerEvents(this.store, parseFilter(input));
  }

  /** About how many rows the ledger holds (its id span): for a progress bar. */
  async size(): Promise<number> {
    const { firstId, lastId } = await this.store.ledger.extent();
    return firstId === null || lastId === null ? 0 : lastId - firstId + 1;
  }

  prune(signer: LedgerSigner, before: Instant, follows?: KnownCheckpoint): Promise<PruneResult> {
    return pruneLedger(this.store, signer, follows === undefined ? { before } : { before, follows });
  }

  commits(params: CommitAuditParams): Promise<CommitCheck[]> {
    return auditCommits(this.store, params);
  }

  sessions(
    input: { since?: Instant; until?: Instant; host?: string } = {},
  ): Promise<readonly SessionReport[]> {
    return this.store.reports.sessions({
      since: input.since,
      until: input.until,
      host: input.host === undefined ? undefined : validateName('host', input.host),
    });
  }
}

/** A key id as `baton ledger key` prints it: 16 hex digits. */
function validateKeyId(keyId: string): string {
  if (!/^[0-9a-f]{16}$/.test(keyId)) {
    throw new InvalidInputError(
      `${JSON.stringify(keyId)} is not a ledger key id`,
      'give the 16 hex digits `baton ledger key` prints before each public key',
    );
  }
  return keyId;
}

function parseFilter(input: ExportFilterInput): LedgerFilter {
  if (input.since !== undefined && input.until !== undefined && input.since >= input.until) {
    throw new InvalidInputError('--since must come before --until');
  }
  return {
    key: input.task === undefined ? undefined : validateKey(input.task),
    session: input.session === undefined ? undefined : validateId('session', input.session),
    host: input.host === undefined ? undefined : validateName('host', input.host),
    type: input.kind === undefined ? undefined : validateName('kind', input.kind),
    since: input.since,
    until: input.until,
  };
}
