/** Small numeric helpers for the bench: medians, percentiles, timing, repetitions. */
import { performance } from 'node:perf_hooks';

export const nowMs = (): number => performance.now();

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((left, right) => left - right);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Nearest-rank percentile, percent in [0, 100]. */
export function percentile(values: readonly number[], percent: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((left, right) => left - right);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((percent / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A measure repeated `reps` times; the figure is the median, the runs are kept for the report. */
export interface Repeated {
  readonly median: number;
  readonly runs: readonly number[];
}

export async function repeat(reps: number, once: (rep: number) => Promise<number>): Promise<Repeated> {
  const runs: number[] = [];
  for (let rep = 0; rep < reps; rep++) runs.push(await once(rep));
  return { median: median(runs), runs };
}

/** Polls `done` every `everyMs` until it is true or `timeoutMs` passes (then throws). */
export async function waitUntil(
  what: string,
  done: () => Promise<boolean>,
  everyMs = 20,
  timeoutMs = 600_000,
): Promise<void> {
  const deadline = nowMs() + timeoutMs;
  while (!(await done())) {
    if (nowMs() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const round = (value: number, digits = 0): number => {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
};

/** Progress lines go to stderr so that `--json` output stays one clean object on stdout. */
export const progress = (line: string): void => {
  process.stderr.write(`bench: ${line}\n`);
};

/** A figure for a report table: '—' when not measured. */
export const fmt = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toFixed(digits) : '—';

/** Repetitions for a report table. */
export const runsOf = (xs: readonly number[], digits = 0): string =>
  xs.map((value) => fmt(value, digits)).join(', ');
