/**
 * Reproduces a finding of the chaos suite (docs/chaos-report.md): a runner whose database calls
 * hang (a blackholed connection; the PostgreSQL store sets no client-side timeout) keeps its
 * agents running past its trust window, because AgentRun and Runner check that window only
 * after a heartbeat call returns. The database still fences every write, but the agent process
 * works on while recovery hands its task to another host (reliability.md, principle 8).
 * Fixed: agent-run.ts and runner.ts check the window on a timer of their own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../../src/daemon/clock.js';
import { runUp, type UpOptions } from '../../src/daemon/up.js';
import { openStore } from '../../src/store/open.js';
import { flaky, network } from './flaky-store.js';

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

test('a runner whose database calls hang kills its agents within its trust window', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-self-fence-'));
  const real = await openStore(join(dir, 'baton.db'));
  const net = network();
  const options: UpOptions = {
    ...{ dbUrl: join(dir, 'baton.db'), host: 'solo', leaseTtlMs: 900, retryIntervalMs: 100 },
    ...{ heartbeatIntervalMs: 100, staleAfterMs: 600, pollIntervalMs: 100, recoveryIntervalMs: 100 },
    ...{ slotsMax: 1, ramTotalMb: 1024, ramReservedMb: 0, standby: false, agentCommand: null },
    ...{ logDir: join(dir, 'logs'), cwd: dir },
  };
  const trustMs = options.staleAfterMs - 2 * options.heartbeatIntervalMs;
  const stop = new AbortController();
  const up = runUp(flaky(real, net), options, systemClock, () => undefined, stop.signal);
  await real.jobs.enqueue({ key: 'k', command: 'sleep 30' });
  let pid: number | null = null;
  while (pid === null) {
    pid = (await real.jobs.list({ key: 'k' }))[0]?.pid ?? null;
    await sleep(50);
  }
  net.mode = 'hang';
  const cut = Date.now();
  while (alive(pid) && Date.now() - cut < 5000) await sleep(50);
  const lived = Date.now() - cut;
  net.release();
  stop.abort();
  await up;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
  await real.close();
  assert.ok(
    lived <= trustMs + 1000,
    `the agent lived ${lived} ms after its runner was cut off (trust ${trustMs} ms)`,
  );
});
