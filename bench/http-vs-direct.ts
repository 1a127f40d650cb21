/**
 * `httpVsDirect` (issue 17): claim + release round trips at concurrency 8, over the HTTP API (a
 * real `baton serve` process, an operator token, keep-alive connections) against the same calls on
 * the store in this process, on one PostgreSQL database. Alternated per repetition; the figure is
 * the median of the per-repetition ratios of round trips per second.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { nowMs, progress } from './stats.js';

export interface HttpVsDirectResult {
  /** Round trips per second, per repetition. */
  readonly http: readonly number[];
  readonly direct: readonly number[];
}

const CONCURRENCY = 8;
const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** Each worker claims and releases its own tasks, one after another, `perWorker` times. */
async function rounds(
  perWorker: number,
  sessions: readonly number[],
  prefix: string,
  step: (key: string, session: number) => Promise<void>,
): Promise<number> {
  const start = nowMs();
  await Promise.all(
    sessions.map(async (session, w) => {
      for (let i = 0; i < perWorker; i++) await step(`${prefix}-${w}-${i}`, session);
    }),
  );
  return (perWorker * sessions.length) / ((nowMs() - start) / 1000);
}

function serve(url: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [join(root, 'bin/baton.js'), 'serve', '--http', '127.0.0.1:0'], {
    env: { ...process.env, BATON_DB: url },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`baton serve exited ${code}`)));
    child.stdout.on('data', (d: Buffer) => {
      const found = /(http:\/\/\S+)/.exec(d.toString())?.[1];
      if (found !== undefined) resolve({ url: found, stop: () => child.kill('SIGINT') });
    });
  });
}

async function seed(store: Store, prefix: string, perWorker: number): Promise<void> {
  for (let w = 0; w < CONCURRENCY; w++) {
    for (let i = 0; i < perWorker; i++) await store.tasks.add({ key: `${prefix}-${w}-${i}` });
  }
}

export async function measureHttpVsDirect(
  url: string,
  perWorker: number,
  reps: number,
): Promise<HttpVsDirectResult> {
  const store = await openStore(url);
  const server = await serve(url);
  try {
    const { secret } = await store.tokens.create({ scope: 'operator', name: 'bench' });
    const sessions: number[] = [];
    for (let w = 0; w < CONCURRENCY; w++)
      sessions.push((await store.sessions.start({ kind: 'agent', host: 'bench', pid: w })).id);
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown): Promise<void> => {
      const r = await fetch(`${server.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    };
    const http: number[] = [];
    const direct: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      await seed(store, `h${rep}`, perWorker);
      await seed(store, `d${rep}`, perWorker);
      http.push(
        await rounds(perWorker, sessions, `h${rep}`, async (key, session) => {
          const k = encodeURIComponent(key);
          await post(`/v1/claims/${k}`, { session });
          await post(`/v1/claims/${k}/release`, { session, epoch: 1, outcome: 'released' });
        }),
      );
      direct.push(
        await rounds(perWorker, sessions, `d${rep}`, async (key, session) => {
          const c = await store.claims.acquire({ key, session });
          if (!c.ok) throw new Error(`${key} held`);
          await store.claims.release({ key, session, epoch: c.claim.epoch, outcome: 'released' });
        }),
      );
      progress(
        `httpVsDirect rep ${rep + 1}: HTTP ${http.at(-1)?.toFixed(0)}/s, direct ${direct.at(-1)?.toFixed(0)}/s`,
      );
    }
    return { http, direct };
  } finally {
    server.stop();
    await store.close();
  }
}
