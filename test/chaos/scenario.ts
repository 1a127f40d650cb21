/**
 * One chaos run: a database (SQLite file, or a PostgreSQL of our own behind the proxy), two
 * `baton up` candidates, several workers, the nemesis for `durationMs`, then a heal and a drain,
 * then the checkers over the client and server histories.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { checkExclusiveClaims, checkEpochs, checkFencedWrites } from './check-claims.js';
import { checkExclusiveLocks } from './check-locks.js';
import { checkLedgerVerifies } from './check-ledger.js';
import { createKeyFile } from '../../src/coordinator/ledger/keys.js';
import { sealLedger } from '../../src/coordinator/ledger/seal.js';
import { verifyLedger } from '../../src/coordinator/ledger/verify.js';
import { checkJobLifecycle, checkNoLostWork } from './check-jobs.js';
import { checkBoundedRecovery, checkBusy, checkClocks, checkFaultsBit } from './check-recovery.js';
import type { CheckInput, CheckResult } from './check-types.js';
import { collectServer } from './collect.js';
import { TIMING } from './config.js';
import { readHistory, type HistoryLine } from './history.js';
import { Nemesis, POSTGRES_FAULTS, SQLITE_FAULTS, type FaultEvent, type FaultKind } from './nemesis.js';
import { startChaosPostgres, type ChaosPostgres } from './pg-server.js';
import { Rng } from './prng.js';
import { PgProxy } from './proxy.js';
import { Supervisor, type ProcEvent } from './supervisor.js';

const BIN = fileURLToPath(new URL('../../../bin/baton.js', import.meta.url));
/** The agent every job runs: it records one effect under its claim, through the CLI. */
const JOB_COMMAND =
  `node ${BIN} effect {{key}} --session {{session}} --epoch {{epoch}} --kind job-run ` +
  `--payload "{\\"job\\":{{job}},\\"attempt\\":{{attempt}}}"`;

export interface ScenarioOptions {
  readonly engine: 'sqlite' | 'postgres';
  readonly seed: number;
  /** How long the nemesis injects faults. */
  readonly durationMs: number;
  /** false: the negative control (workers' effects are not fenced). */
  readonly fencing: boolean;
  readonly workers?: number;
  readonly tasks?: number;
  /** Keep the run's folder (logs, histories, database) even when nothing broke. */
  readonly keep?: boolean;
  /** Aborts the run (Ctrl-C): the processes and the server are still cleaned up. */
  readonly signal?: AbortSignal;
  readonly log?: (line: string) => void;
}

export interface ScenarioResult {
  readonly options: ScenarioOptions;
  readonly dir: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly faults: readonly FaultEvent[];
  readonly procs: readonly ProcEvent[];
  readonly client: readonly HistoryLine[];
  readonly input: CheckInput;
  readonly checks: readonly CheckResult[];
  readonly violations: number;
}

async function until(
  what: string,
  ms: number,
  check: () => Promise<boolean>,
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (signal?.aborted === true) throw new Error('chaos: interrupted');
    if (Date.now() > deadline) throw new Error(`chaos: timed out after ${ms} ms waiting for ${what}`);
    await sleep(250);
  }
}

/** All jobs terminal, and every live session heartbeating (the dead ones rescued). */
async function drained(admin: Store): Promise<boolean> {
  const active = await admin.jobs.list({ status: ['queued', 'claimed', 'running'], limit: 1 });
  const now = await admin.now();
  const live = await admin.sessions.list({ liveOnly: true });
  return active.length === 0 && live.every((s) => now - s.heartbeatAt < 2 * TIMING.staleAfterMs);
}

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => undefined);
  const rng = new Rng(o.seed);
  const dir = mkdtempSync(join(tmpdir(), `baton-chaos-${o.engine}-`));
  const pg: ChaosPostgres | null = o.engine === 'postgres' ? await startChaosPostgres() : null;
  const proxy = pg === null ? null : new PgProxy('127.0.0.1', pg.port);
  const direct = pg?.url ?? join(dir, 'baton.db');
  const admin = await openStore(direct);
  const workers = Array.from({ length: o.workers ?? 4 }, (_, i) => `worker-${i + 1}`);
  const ups = ['up-a', 'up-b'];
  const tasks = Array.from({ length: o.tasks ?? 3 }, (_, i) => `chaos-${i}`);
  const workspaces = ['ws-0', 'ws-1'];
  const jobWorkspace = 'ws-jobs';
  const urls = new Map<string, string>();
  for (const slot of [...workers, ...ups]) {
    const port = proxy === null ? 0 : await proxy.add(slot);
    urls.set(slot, pg === null ? direct : `postgres://postgres:postgres@127.0.0.1:${port}/postgres`);
  }
  const historyOf = (slot: string) => join(dir, `history-${slot}.jsonl`);
  const supervisor = new Supervisor({
    dir,
    rng: rng.fork('processes'),
    urlFor: (slot) => urls.get(slot) ?? direct,
    maxOffsetMs: 300_000,
    worker: (slot, generation) => ({
      url: urls.get(slot) ?? direct,
      history: historyOf(slot),
      name: slot,
      generation,
      seed: o.seed,
      tasks,
      workspaces,
      jobWorkspace,
      heartbeatMs: TIMING.heartbeatMs,
      opTimeoutMs: 4000,
      jobChance: 0.12,
      jobCommand: JOB_COMMAND,
      unsafeDisableFencing: !o.fencing,
      holdMs: o.engine === 'sqlite' ? 3000 : 0,
    }),
  });
  const kinds: readonly FaultKind[] = o.engine === 'sqlite' ? SQLITE_FAULTS : POSTGRES_FAULTS;
  const nemesis = new Nemesis({
    ...{ rng: rng.fork('nemesis'), supervisor, admin, kinds },
    ...{ workers, ups, historyOf, proxy, pg, log },
    sqliteFile: o.engine === 'sqlite' ? join(dir, 'baton.db') : null,
  });
  let result: ScenarioResult | undefined;
  try {
    // The ups seal the ledger while they lead, with the key at their default path (.baton/ledger.key).
    const setupAt = Date.now();
    const signer = createKeyFile(join(dir, '.baton', 'ledger.key'));
    await admin.ledger.addKey({ id: signer.keyId, publicKey: signer.publicKey });
    for (const key of tasks) await admin.tasks.add({ key });
    for (const name of [...workspaces, jobWorkspace])
      await admin.workspaces.add({ name, path: dir, kind: 'dir' });
    for (const slot of ups) supervisor.start(slot, 'up');
    const leading = async () => (await admin.leases.get('dispatcher')) !== null;
    await until('a dispatcher leader', 30_000, leading, o.signal);
    for (const slot of workers) supervisor.start(slot, 'worker');
    const startedAt = Date.now();
    const fencing = o.fencing ? 'on' : 'OFF';
    log(`chaos: ${o.engine}, seed ${o.seed}, ${o.durationMs} ms of faults, fencing ${fencing}; ${dir}`);
    await nemesis.run(o.durationMs, o.signal);
    log('chaos: healing, then draining');
    await nemesis.heal();
    await supervisor.stop('worker', 15_000);
    // A drain that never ends is a finding, not a crash of the run: the checkers name what is stuck.
    await until(
      'the queue to drain and dead sessions to be rescued',
      180_000,
      () => drained(admin),
      o.signal,
    ).catch((error: unknown) => {
      if (o.signal?.aborted === true) throw error;
      log(`chaos: ${(error as Error).message}; checking what is stuck`);
    });
    const server = await collectServer(admin);
    const endedAt = Date.now();
    await supervisor.stop('up', 15_000);
    const sealedDuringRun = await admin.ledger.checkpoints({ afterSeq: 0, limit: 100_000 });
    await sealLedger(admin, signer);
    const ledger = await verifyLedger(admin, { publicKeys: [signer.publicKey] });
    const client = workers.flatMap((w) => readHistory(historyOf(w)));
    const upLogs = ups.flatMap((u) => readFileSync(join(dir, `${u}.log`), 'utf8').split('\n'));
    const input: CheckInput = {
      engine: o.engine,
      server,
      client,
      faults: nemesis.events,
      procs: supervisor.events,
      upLogs,
      setupAt,
      startedAt,
      endedAt,
      kinds,
    };
    const checks = [
      checkEpochs(input),
      checkFencedWrites(input),
      checkExclusiveClaims(input),
      checkExclusiveLocks(input),
      checkNoLostWork(input),
      checkJobLifecycle(input),
      checkFaultsBit(input),
      checkBoundedRecovery(input),
      checkClocks(input),
      ...(o.engine === 'sqlite' ? [checkBusy(input)] : []),
      checkLedgerVerifies(ledger, sealedDuringRun),
    ];
    const violations = checks.reduce((n, c) => n + c.count, 0);
    writeFileSync(
      join(dir, 'nemesis.json'),
      JSON.stringify({ faults: nemesis.events, procs: supervisor.events }),
    );
    const { events: faults } = nemesis;
    const procs = supervisor.events;
    result = { options: o, dir, startedAt, endedAt, faults, procs, client, input, checks, violations };
    return result;
  } finally {
    await nemesis.heal().catch(() => undefined);
    await supervisor.stop('worker', 5000).catch(() => undefined);
    await supervisor.stop('up', 5000).catch(() => undefined);
    await admin.close().catch(() => undefined);
    await proxy?.close();
    await pg?.stop();
    const clean = result !== undefined && o.keep !== true && (result.violations === 0) === o.fencing;
    if (clean) rmSync(dir, { recursive: true, force: true });
  }
}
