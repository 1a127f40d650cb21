import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntil } from '../../test/support/wait.js';
import { cgroupPids } from './cgroup.js';
import { processExists as isAlive } from './process-tree.js';
import { openContainment, type Containment } from './containment.js';

const MIB = 1024 * 1024;

/** A cgroup containment keeping a warm slot, or null where this host has no cgroup to give. */
function warmCgroups(): Containment | null {
  const containment = openContainment({ choice: 'auto', shimPath: '', warm: true });
  if (containment.launcher !== null) return containment;
  void containment.close();
  return null;
}

/** The pids in slot `n`'s cgroup of each hierarchy (empty for one that is gone). */
function slotPids(containment: Containment, n: number): number[][] {
  return containment.ref.dirs.map((base) => cgroupPids(join(base, `slot-${n}`)));
}

/** Waits until slot `n` holds one waiting process in every hierarchy, and returns its pid. */
async function slotReady(containment: Containment, n: number): Promise<number> {
  await waitUntil(
    () => slotPids(containment, n).every((pids) => pids.length === 1),
    10_000,
    `slot-${n}'s process in its cgroups`,
  );
  const [pid] = slotPids(containment, n)[0] ?? [];
  assert.ok(pid !== undefined);
  return pid;
}

/** The memory budget written in the slot's cgroups (v1 or v2 file), or null without a memory controller. */
function slotBudget(containment: Containment, n: number): string | null {
  for (const base of containment.ref.dirs) {
    for (const file of ['memory.limit_in_bytes', 'memory.max']) {
      const path = join(base, `slot-${n}`, file);
      if (existsSync(path)) return readFileSync(path, 'utf8').trim();
    }
  }
  return null;
}

test('a job adopts the warm slot: its process already in, its budget set then; the next slot follows', async (t) => {
  const containment = warmCgroups();
  if (containment === null) return t.skip('no cgroup on this host');
  const dir = mkdtempSync(join(tmpdir(), 'baton-warm-test-'));
  try {
    const waitingPid = await slotReady(containment, 1);
    const before = slotBudget(containment, 1);
    const taken = containment.warmScope(1, 1, 256);
    assert.ok(taken !== null, 'the ready slot is taken');
    assert.deepEqual(taken.scope.members(), [waitingPid], 'no process forked or moved for the job');
    if (before !== null) {
      assert.notEqual(before, String(256 * MIB), 'no budget before the job');
      assert.equal(slotBudget(containment, 1), String(256 * MIB), "the job's budget once adopted");
    }
    assert.equal(containment.warmScope(2, 1, null), null, 'one slot: a second start makes its own scope');

    // Newlines in the command and in a value go through the launcher's quoting (its NL).
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', MULTI: 'line 1\nline 2' };
    const agent = await taken.waiting.start({
      ...{ file: '/bin/sh', cwd: dir, env },
      args: ['-c', 'printf %s "$MULTI" > multi.txt\ngrep -c /slot-1$ /proc/self/cgroup; exit 5'],
    });
    assert.ok(agent !== null);
    let output = '';
    agent.output.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const code = await new Promise((resolve) =>
      agent.on('exit', (exitCode: number | null) => resolve(exitCode)),
    );
    assert.equal(code, 5);
    await waitUntil(() => output !== '', 5_000, "the agent's output");
    assert.equal(output.trim(), String(containment.ref.dirs.length), 'it ran in every cgroup of the slot');
    assert.equal(readFileSync(join(dir, 'multi.txt'), 'utf8'), 'line 1\nline 2', 'newlines kept');

    const next = await slotReady(containment, 2);
    await taken.scope.close();
    await containment.close();
    assert.ok(
      containment.ref.dirs.every((base) => !existsSync(base)),
      "the runner's cgroups, slots included, removed",
    );
    await waitUntil(() => !isAlive(next), 5_000, "the next slot's process ended with the containment");
  } finally {
    await containment.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a slot whose process died is not adopted; a cancelled one makes way for the next', async (t) => {
  const containment = warmCgroups();
  if (containment === null) return t.skip('no cgroup on this host');
  try {
    process.kill(await slotReady(containment, 1), 'SIGKILL');
    await waitUntil(() => slotPids(containment, 1).every((pids) => pids.length === 0), 5_000, 'slot-1 empty');
    // Its launcher reports the exit on its pipe; give that line time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(containment.warmScope(1, 1, null), null, 'a dead slot is dropped, not given to a job');
    assert.ok(
      !containment.ref.dirs.some((base) => existsSync(join(base, 'slot-1'))),
      'and its cgroups removed',
    );

    await slotReady(containment, 2); // made by the take's fallback, without a start
    const taken = containment.warmScope(2, 1, null);
    assert.ok(taken !== null);
    taken.waiting.cancel();
    await waitUntil(
      () => slotPids(containment, 2).every((pids) => pids.length === 0),
      5_000,
      'slot-2 cancelled',
    );
    await slotReady(containment, 3);
    await taken.scope.close();
  } finally {
    await containment.close();
  }
});
