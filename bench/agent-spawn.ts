/**
 * How long an agent takes to start under each containment this host offers: from the runner's
 * spawn() to the agent command's first instruction (`date +%s%N`), against a plain `sh -c`.
 * cgroup kinds start agents through a one-line shell that enters the job's cgroup; the
 * process-group kind boots the Node shim. Not part of `npm run bench`'s peers comparison.
 *
 *   npm run build --silent && node dist/bench/agent-spawn.js [runs]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTAINMENT_KINDS, type ContainmentKind } from '../src/core/containment.js';
import { openContainment } from '../src/os/containment.js';

const runs = Number(process.argv[2] ?? 40);
const shim = fileURLToPath(new URL('../src/os/agent-shim.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'baton-agent-spawn-'));

/** Spawns `file args`, waits for it, and returns the delay until `date` ran, in ms. */
async function once(file: string, args: string[], out: string, env: NodeJS.ProcessEnv): Promise<number> {
  const start = performance.timeOrigin + performance.now();
  const child = spawn(file, args, { detached: true, stdio: 'ignore', env });
  await new Promise((resolve) => child.on('exit', resolve));
  return Number(readFileSync(out, 'utf8').trim()) / 1e6 - start;
}

function summary(what: string, ms: number[]): string {
  const sorted = [...ms].sort((left, right) => left - right);
  const at = (quantile: number): string =>
    (sorted[Math.floor(quantile * (sorted.length - 1))] ?? 0).toFixed(1);
  return `${what.padEnd(14)} p50 ${at(0.5)} ms  p90 ${at(0.9)} ms  (n=${sorted.length})`;
}

async function measure(kind: ContainmentKind): Promise<string> {
  let containment;
  try {
    containment = openContainment({ choice: kind, shimPath: shim });
  } catch {
    return `${kind.padEnd(14)} not available on this host`;
  }
  const ms: number[] = [];
  for (let index = 0; index < runs; index++) {
    const scope = containment.scope(index + 1, 1, 256);
    scope.create();
    const out = join(dir, `${kind}-${index}`);
    const { file, args } = scope.spawnArgs(`date +%s%N > ${out}`);
    ms.push(await once(file, args, out, { PATH: process.env['PATH'] ?? '', BATON_RUN: scope.marker }));
    await scope.close();
  }
  await containment.close();
  return summary(kind, ms);
}

const plain: number[] = [];
for (let index = 0; index < runs; index++) {
  const out = join(dir, `plain-${index}`);
  plain.push(await once('/bin/sh', ['-c', `date +%s%N > ${out}`], out, { PATH: process.env['PATH'] ?? '' }));
}
const lines = [summary('plain sh -c', plain)];
for (const kind of CONTAINMENT_KINDS) lines.push(await measure(kind));
rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${lines.join('\n')}\n`);
