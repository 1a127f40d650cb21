/**
 * CLI: the wall time of `baton claim <key> --session S` as a fresh process, against a bare
 * `node -e ''`. Runs alternate (node, baton, node, baton …) so a slow spell hits both; each baton
 * run claims a task of its own, so every run is a real grant, not the idempotent repeat.
 */
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open.js';
import { median, nowMs } from './stats.js';

const BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

export interface CliResult {
  readonly batonMs: number;
  readonly nodeMs: number;
  readonly batonRuns: readonly number[];
  readonly nodeRuns: readonly number[];
}

function timed(args: readonly string[]): number {
  const t0 = nowMs();
  const result = spawnSync(process.execPath, args, { encoding: 'utf8' });
  const ms = nowMs() - t0;
  if (result.status !== 0)
    throw new Error(`bench: node ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

/** `db` is what the CLI gets as --db: a SQLite path or a postgres:// URL. */
export async function measureCli(db: string, runs: number): Promise<CliResult> {
  const store = await openStore(db);
  let session: number;
  try {
    session = (await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid })).id;
    for (let index = 0; index <= runs; index++) await store.tasks.add({ key: `cli-${index}` });
  } finally {
    await store.close();
  }
  // One untimed run each: the file system cache, not the CLI, is what a first run measures.
  timed(['-e', '']);
  timed([BIN, 'claim', 'cli-0', '--session', String(session), '--db', db]);
  const nodeRuns: number[] = [];
  const batonRuns: number[] = [];
  for (let index = 1; index <= runs; index++) {
    nodeRuns.push(timed(['-e', '']));
    batonRuns.push(timed([BIN, 'claim', `cli-${index}`, '--session', String(session), '--db', db]));
  }
  return { batonMs: median(batonRuns), nodeMs: median(nodeRuns), batonRuns, nodeRuns };
}
