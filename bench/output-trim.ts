/**
 * The leader's output trim at scale (docs/decisions/0043, "The output trim walks what changed"):
 * `jobs` finished jobs (fleet-seed.ts) each holding `chunks` output rows of `size` bytes, nothing
 * to trim, seeded straight in SQL (setup only); then `store.output.trim` is timed `passes` times on one
 * store with a 10 ms timer running, printing each pass's time and how late the timer fired at most
 * (what the pass cost `baton up`'s event loop on SQLite). Then a second store on the same file (a
 * new leader's process) runs `restarts` passes: it resumes from the walks' kept cursors (migration
 * 0047), where before it walked the whole history again as the first store's first passes did.
 *
 * Run alone: `node dist/bench/output-trim.js <new sqlite path> [jobs] [chunks] [size] [passes] [restarts]`.
 */
import Database from 'better-sqlite3';
import { OUTPUT_KEEP_ENDED } from '../src/core/output-stream.js';
import { openStore } from '../src/store/open.js';
import { seedHistory } from './fleet-seed.js';
import { nowMs } from './stats.js';

async function measure(
  path: string,
  jobs: number,
  chunks: number,
  size: number,
  passes: number,
  restarts: number,
): Promise<void> {
  await seedHistory(path, { queued: 0, finished: jobs });
  const db = new Database(path);
  try {
    db.exec(`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${chunks - 1})
      INSERT INTO output_chunks (job_id, attempt, start_byte, epoch, bytes)
      SELECT j.id, 1, k.i * ${size}, 1, zeroblob(${size}) FROM jobs j, k`);
  } finally {
    db.close();
  }
  await timePasses(path, passes, 'pass');
  await timePasses(path, restarts, 'a new store, pass');
}

/** `passes` trims on a store of its own, each timed with a 10 ms timer running beside it. */
async function timePasses(path: string, passes: number, label: string): Promise<void> {
  const store = await openStore(path);
  try {
    for (let pass = 0; pass < passes; pass++) {
      let late = 0;
      let last = nowMs();
      const timer = setInterval(() => {
        const now = nowMs();
        late = Math.max(late, now - last - 10);
        last = now;
      }, 10);
      const start = nowMs();
      const deleted = await store.output.trim({ keep: OUTPUT_KEEP_ENDED, endedBefore: 0 });
      const ms = nowMs() - start;
      await new Promise((resolve) => setTimeout(resolve, 30));
      clearInterval(timer);
      console.log(
        `${label} ${pass + 1}: ${ms.toFixed(1)} ms, ${deleted} rows, the timer at most ${late.toFixed(0)} ms late`,
      );
    }
  } finally {
    await store.close();
  }
}

const [path, jobs, chunks, size, passes, restarts] = process.argv.slice(2);
if (path === undefined) {
  console.error(
    'usage: node dist/bench/output-trim.js <new sqlite path> [jobs] [chunks] [size] [passes] [restarts]',
  );
  process.exit(2);
}
await measure(
  path,
  Number(jobs ?? 100_000),
  Number(chunks ?? 2),
  Number(size ?? 1024),
  Number(passes ?? 12),
  Number(restarts ?? 3),
);
