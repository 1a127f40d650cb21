/**
 * Turns any error into one stderr line, an optional JSON object on stdout and an exit code.
 * BatonErrors map through EXIT_CODE_BY_ERROR; anything else is unexpected (exit 1) and shows its
 * stack only with BATON_DEBUG=1.
 */
import {
  BatonError,
  diskFullError,
  isCorrupt,
  isDiskFull,
  notADatabase,
  StoreUnavailableError,
  TaskStateError,
} from '../core/errors.js';
import { EXIT_CODE_BY_ERROR, EXIT_UNEXPECTED } from './exit-codes.js';
import { terminalText, writeErrorLine, writeJson } from './output.js';
import { writeErr } from './stdio.js';
import { Refusal } from './refusal.js';
import { RemoteRefusal } from '../agents/remote-refusal.js';

// Socket errors that mean "the database is not there". Engines should already wrap these in
// StoreUnavailableError; this keeps the exit code right if one slips through.
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'EAI_AGAIN']);

export function reportError(error: unknown, json: boolean): number {
  const known = asBatonError(error);
  if (known !== null) {
    writeErrorLine(known.message, known.hint);
    if (json) {
      // A refusal the HTTP API answered carries the server's label and details, as a local one does.
      const labelled = known instanceof Refusal || known instanceof RemoteRefusal;
      const label = labelled ? known.label : known.code;
      const details = labelled || known instanceof TaskStateError ? known.details : {};
      const fields = { error: label, code: known.code, message: known.message, hint: known.hint ?? null };
      writeJson({ ...fields, ...details });
    }
    return EXIT_CODE_BY_ERROR[known.code];
  }
  const message = error instanceof Error ? error.message : String(error);
  writeErrorLine(message || 'unexpected error', 'run again with BATON_DEBUG=1 for the stack');
  if (process.env['BATON_DEBUG'] === '1' && error instanceof Error && error.stack !== undefined) {
    writeErr(`${terminalText(error.stack)}\n`);
  }
  if (json) writeJson({ error: 'unexpected', message, hint: null });
  return EXIT_UNEXPECTED;
}

function asBatonError(error: unknown): BatonError | null {
  if (error instanceof BatonError) return error;
  // A full disk or a damaged file met after the open: the same named causes as at the open.
  if (isDiskFull(error)) return diskFullError('the database cannot be written', (error as Error).message);
  if (isCorrupt(error)) return notADatabase('the database', (error as Error).message);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE.has(code)) {
    return new StoreUnavailableError(
      `cannot reach the database (${code})`,
      'check that it is running and that --db or BATON_DB points at it',
    );
  }
  return null;
}
