/**
 * The ledger's sealer as `baton up`'s leader runs it (src/daemon/sealer.ts), in a process of its
 * own beside a drain, for the throughput bench's "tamper evidence on" runs. Forked by ledger-on.ts:
 *   sealer-proc <db url> <key file> <interval ms>
 * It says `ready`, seals every interval until told `stop`; then it seals every row still unsealed
 * at once and answers `stopped` with the rows and checkpoints it sealed before the stop, and the
 * ms that catching up took (the "on" drain is charged for it: ledger-on.ts).
 */
import { loadKeyFile } from '../src/coordinator/ledger/keys.js';
import { systemClock } from '../src/daemon/clock.js';
import { LedgerSealer } from '../src/daemon/sealer.js';
import { openStore } from '../src/store/open.js';

export type SealerMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'stopped';
      readonly rows: number;
      readonly checkpoints: number;
      readonly failures: number;
      /** From the stop to every row sealed: the sealing the drain left behind. */
      readonly catchUpMs: number;
    };

const [url, keyFile, interval] = process.argv.slice(2);
if (url === undefined || keyFile === undefined)
  throw new Error('usage: sealer-proc <db> <key file> <interval ms>');
const store = await openStore(url);
const sealer = new LedgerSealer({
  store,
  signer: loadKeyFile(keyFile),
  leading: () => true,
  clock: systemClock,
  intervalMs: Number(interval ?? 500),
  anchorFile: null,
});
let rows = 0;
let checkpoints = 0;
let failures = 0;
sealer.on('sealed', (sealed) => {
  checkpoints += sealed.length;
  rows += sealed.reduce((total, checkpoint) => total + checkpoint.rowCount, 0);
});
sealer.on('failed', (error) => {
  failures++;
  process.stderr.write(`bench sealer: ${error instanceof Error ? error.message : String(error)}\n`);
});
process.once('message', (message: { type: string }) => {
  if (message.type !== 'stop') return;
  const stoppedAt = performance.now();
  void sealer.stop().then(async () => {
    const [rowsBefore, checkpointsBefore] = [rows, checkpoints];
    await sealer.sealNow().catch(() => failures++);
    const catchUpMs = performance.now() - stoppedAt;
    await store.close();
    process.send?.({
      type: 'stopped',
      rows: rowsBefore,
      checkpoints: checkpointsBefore,
      failures,
      catchUpMs,
    } satisfies SealerMessage);
    process.disconnect?.();
  });
});
// Warm, as a running `baton up`'s sealer is: its connection open, its key checked, its statements
// planned, its code compiled on the warm-up rows ledger-on.ts wrote, which this seals. Not timed.
await sealer.sealNow();
[rows, checkpoints] = [0, 0];
sealer.start();
process.send?.({ type: 'ready' } satisfies SealerMessage);
