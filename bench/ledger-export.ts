/**
 * The ledger at scale: a ledger of N rows (bulk-loaded in SQL, then sealed), exported to JSONL and
 * verified offline and in the database, each command in a process of its own (ledger-child.ts),
 * whose peak RSS is the figure. Run at two sizes: memory that stays flat from the small ledger to
 * the large one (10×) is constant memory. Also how fast the sealer covers rows.
 */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createKeyFile, type LedgerSigner } from '../src/coordinator/ledger/keys.js';
import { sealLedger } from '../src/coordinator/ledger/seal.js';
import { openStore } from '../src/store/open.js';
import { withClient } from './pg-server.js';
import { nowMs, progress } from './stats.js';

const CHILD = fileURLToPath(new URL('./ledger-child.js', import.meta.url));

export interface CommandRun {
  readonly maxRssMb: number;
  readonly seconds: number;
}

export interface LedgerScaleRun {
  readonly engine: 'sqlite' | 'postgres';
  readonly rows: number;
  /** Rows sealed per second by one sealer (the leader's work, not on the hot path). */
  readonly sealRowsPerSec: number;
  readonly exportMb: number;
  readonly export: CommandRun;
  readonly verifyFile: CommandRun;
  /** Verifying in the database (only at the large size). */
  readonly verifyDb: CommandRun | null;
}

const TYPES = ['claim:granted', 'job:claimed', 'job:started', 'job:finished', 'claim:released'];

/** N ledger rows in one statement: what a busy cluster writes, with a small JSON detail each. */
async function fillLedger(url: string, engine: 'sqlite' | 'postgres', rowsWanted: number): Promise<void> {
  const types = `'${TYPES.join("','")}'`;
  if (engine === 'sqlite') {
    const db = new Database(url);
    try {
      db.prepare(
        `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @n)
         INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
         SELECT @now + i, json_extract(json_array(${types}), '$[' || (i % 5) || ']'),
           'bench-' || (i / 3), i / 3, 1 + i % 8, 'box-' || (i % 4), 1 + i % 3,
           json_object('attempt', 1 + i % 3, 'host', 'box-' || (i % 4)) FROM g`,
      ).run({ n: rowsWanted, now: Date.now() - rowsWanted });
    } finally {
      db.close();
    }
    return;
  }
  await withClient(url, (client) =>
    client.query(
      `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
       SELECT date_trunc('milliseconds', now()) - ($1::int - g) * interval '1 millisecond',
         (ARRAY[${types}])[1 + g % 5], 'bench-' || (g / 3), g / 3, 1 + g % 8, 'box-' || (g % 4), 1 + g % 3,
         jsonb_build_object('attempt', 1 + g % 3, 'host', 'box-' || (g % 4))
       FROM generate_series(1, $1::int) g`,
      [rowsWanted],
    ),
  );
}

function runChild(args: readonly string[]): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, ...args], {
      stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
    });
    let out = '';
    child.stdio[3]?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code) => {
      const report = JSON.parse(out.trim() || '{}') as { code?: number; maxRssMb?: number; seconds?: number };
      if (code !== 0 || report.code !== 0) reject(new Error(`bench: baton ${args.join(' ')} exited ${code}`));
      else resolve({ maxRssMb: report.maxRssMb ?? Number.NaN, seconds: report.seconds ?? Number.NaN });
    });
  });
}

async function seal(url: string, signer: LedgerSigner): Promise<number> {
  const store = await openStore(url);
  try {
    await store.ledger.addKey({ id: signer.keyId, publicKey: signer.publicKey });
    const started = nowMs();
    let rows = 0;
    for (;;) {
      const { sealed } = await sealLedger(store, signer, { checkpointsMax: 1_000_000 });
      const sealedRows = sealed.reduce((sum, checkpoint) => sum + checkpoint.rowCount, 0);
      rows += sealedRows;
      if (sealedRows === 0) break;
    }
    return rows / ((nowMs() - started) / 1000);
  } finally {
    await store.close();
  }
}

/** One size on one engine: `url` names a fresh, empty database; `dir` a scratch folder. */
export async function measureLedgerScale(
  engine: 'sqlite' | 'postgres',
  url: string,
  dir: string,
  rows: number,
  verifyDb: boolean,
): Promise<LedgerScaleRun> {
  const store = await openStore(url);
  await store.close();
  await fillLedger(url, engine, rows);
  const signer = createKeyFile(join(dir, `ledger-${engine}-${rows}.key`));
  const sealRowsPerSec = await seal(url, signer);
  const file = join(dir, `export-${engine}-${rows}.jsonl`);
  const exported = await runChild(['--db', url, 'audit', 'export', '--format', 'jsonl', '--out', file]);
  const pin = ['--public-key', `ed25519:${signer.publicKey}`];
  const verifyFile = await runChild(['audit', 'verify', '--file', file, ...pin]);
  const inDb = verifyDb ? await runChild(['--db', url, 'audit', 'verify', ...pin]) : null;
  const run = {
    engine,
    rows,
    sealRowsPerSec,
    exportMb: statSync(file).size / 2 ** 20,
    export: exported,
    verifyFile,
    verifyDb: inDb,
  };
  progress(
    `ledger ${engine} ${rows} rows: seal ${Math.round(sealRowsPerSec)} rows/s; export ${run.exportMb.toFixed(0)} MB ` +
      `peak RSS ${exported.maxRssMb.toFixed(0)} MB (${exported.seconds.toFixed(1)} s), verify --file ` +
      `${verifyFile.maxRssMb.toFixed(0)} MB (${verifyFile.seconds.toFixed(1)} s)` +
      (inDb === null
        ? ''
        : `, verify in the database ${inDb.maxRssMb.toFixed(0)} MB (${inDb.seconds.toFixed(1)} s)`),
  );
  return run;
}
