/**
 * `httpVsDirect` (issue 17): claim + release round trips at concurrency 8, over the HTTP API (a
 * real `baton serve` process, an operator token, keep-alive connections of node:http) against the same calls on
 * the store in this process, on one PostgreSQL database. Alternated per repetition; the figure is
 * the median of the per-repetition ratios of round trips per second.
 *
 * Both sides reach PostgreSQL the same way: over TCP to the server's URL, or, with
 * `--pg-socket <dir>`, over the server's Unix socket in that directory (same port, so the same
 * server; the bench's throwaway server puts its socket in /tmp), for `baton serve` and the
 * in-process store alike, so the ratio compares the HTTP hop only.
 *
 * Both sides first run one repetition that is not counted (a warm-up, as JMH and criterion do),
 * since `baton serve` starts fresh while this process has already run the store's code seeding:
 * without it, --quick's 400 round trips a repetition were mostly the server's warm-up:
 * measured on the 2-core machine (issue 17), its CPU per request runs about 1.3–1.6 ms in the
 * first 800 requests, 1.0 ms in the next 800, 0.6 ms in the third and 0.4–0.5 ms after some
 * 2,500, while V8 still interprets and then compiles the request path (node:http, Hono and its
 * node adapter, zod, pg). Of the warm figure, a server on node:http alone calling the same
 * coordinator spends about 85–90 %, of the first repetition's about 75 %.
 *
 * Where a warm request's time goes (issue 22, measured 2026-12-04 at load 8–20 on the 2 cores):
 * - Round trips: one statement per request, as in process (pg_stat_database xact_commit: 2.0 per
 *   claim + release on both sides); the token check asks the store once per 2 s
 *   (coordinator/token-cache.ts). Per request the server makes 2 reads, 2 writevs (one to the
 *   client, one to PostgreSQL) and about 1.5 epoll wake-ups (`strace -c -f -p`).
 * - CPU, 0.5–1.0 ms a request under that load (more as the load rises), has no hot spot. Shares
 *   of its JavaScript time in a `--cpu-prof` (time in writev left out: on a loaded machine it is
 *   mostly the wait after waking the peer): pg, the store and the coordinator 27 %, Hono with
 *   its node adapter and zod 25 %, node:http and streams 21 %, GC and V8 12 %,
 *   AsyncLocalStorage's promise hooks 5 % (store/actor.ts), the token's sha256 2.5 %. Neither
 *   making actingAs a no-op nor dropping the `audit_by_token` index (which API rows fill) moved
 *   the server's or PostgreSQL's CPU per round trip beyond the run-to-run scatter (±10 %).
 * - Waiting: a request took 36–54 ms at the client while its store call took 21–29 ms in the
 *   server (its latency histogram, /metrics). A round trip in process is 4 wake-ups (the
 *   PostgreSQL backend and this process, per statement); over HTTP it is 8 (server, backend,
 *   server, client, per request). When the cores are oversubscribed each wake-up waits for a
 *   core, and the HTTP side has twice as many: the ratio falls as the load rises (0.26–0.42 per
 *   run at load 15, 0.47 in the full run at load 4). On a shared machine, raising it needs fewer
 *   wake-ups per request more than a leaner handler.
 *
 * The fast path (issue 22, measured 2026-12-04 23:00-23:33 UTC, load 2.5-7.9 on the 2 cores): a
 * leaner handler did raise it, since on this machine the bench is bound by CPU and `baton serve`
 * took nearly half of the HTTP side's. `baton serve` now answers a plainly well-formed claim or release
 * without Hono, its node adapter or zod (http/fast-claims.ts; anything else still goes to Hono).
 * Its CPU per round trip fell from 1.2-2.4 ms (mostly 1.3-1.6) to 0.5-0.9 ms; the client's and
 * PostgreSQL's stayed within their run-to-run scatter. Runs alternated between a build of the commit before (base) and
 * the branch, `node dist/bench/run.js --only http --json [--quick]` with BATON_BENCH_PG_URL the
 * machine's PostgreSQL 15, median of 3 repetitions each:
 * - `--quick`, 9 runs of base and 8 of the branch: base 0.33, 0.54, 0.42, 0.41, 0.46, 0.50,
 *   0.42, 0.47, 0.35 (median 0.42); branch 0.64, 0.69, 0.69, 0.59, 0.73, 0.69, 0.51, 0.61
 *   (median 0.66).
 * - full, 2 runs each: base 0.451 (0.450, 0.451, 0.462) and 0.432 (0.428, 0.432, 0.594); branch
 *   0.771 (0.744, 0.771, 1.245: in the last the in-process side was slowed by another session's
 *   work) and 0.607 (0.607, 0.633, 0.591). `baton serve`'s CPU per round trip in them: base
 *   1.16-1.68 ms, branch 0.51-0.72 ms.
 * A profile of `baton serve` after it (--cpu-prof, 4,000 warm round trips): `writev` 52 % of its
 * busy time, GC 4.5 %, and no JavaScript function above 2 %.
 * Two more `--quick` pairs at 23:40 (load 3.8-5): base 0.42, 0.49; branch 0.67, 0.49. The last
 * ran while the machine was quieter (direct 1,911 round trips/s, twice the usual), and shows what
 * is left: the HTTP side's CPU per round trip, 0.26 ms in the bench's client, 0.45 in `baton
 * serve` and 0.85 in PostgreSQL (1.56 ms), is still 1.8 times the direct side's (0.19 + 0.68 =
 * 0.86 ms), a CPU ratio of 0.55, and with the bench alone keeping both cores busy its ratio of
 * round trips (0.49) sat near it. The rest of the server's CPU has no single part worth taking
 * on; PostgreSQL's, higher over HTTP in every run, was already measured as not coming from acting
 * with a token (docs/decisions/0012).
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { nowMs, progress } from './stats.js';

export interface HttpVsDirectResult {
  /** Round trips per second, per repetition. */
  readonly http: readonly number[];
  readonly direct: readonly number[];
  /** How both sides reached PostgreSQL: `tcp`, or `unix socket <dir>`. */
  readonly transport?: string;
}

/** The database URL reached over the Unix socket in `dir` (libpq's `host` parameter), same port. */
export function overSocket(url: string, dir: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('host', dir);
  return parsed.toString();
}

const CONCURRENCY = 8;
const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** Each worker claims and releases its own tasks, one after another, `perWorker` times. */
async function timedRounds(
  perWorker: number,
  sessions: readonly number[],
  prefix: string,
  step: (key: string, session: number) => Promise<void>,
): Promise<number> {
  const start = nowMs();
  await Promise.all(
    sessions.map(async (session, worker) => {
      for (let index = 0; index < perWorker; index++) await step(`${prefix}-${worker}-${index}`, session);
    }),
  );
  return (perWorker * sessions.length) / ((nowMs() - start) / 1000);
}

const ticksPerSecond = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU ms (user + system) so far of each process `pick` chooses by pid and command line; empty off Linux. */
function cpuMsOf(pick: (pid: number, cmdline: string) => boolean): Map<number, number> {
  const found = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return found;
  }
  for (const pid of pids) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (!pick(Number(pid), cmdline)) continue;
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      found.set(Number(pid), ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Where a side's CPU went so far: this process, `baton serve`, and the database's backends, by pid. */
function cpuNow(serverPid: number | undefined, database: string): readonly Map<number, number>[] {
  const self = process.cpuUsage();
  return [
    new Map([[0, (self.user + self.system) / 1000]]),
    cpuMsOf((pid) => pid === serverPid),
    cpuMsOf((_pid, cmdline) => cmdline.startsWith('postgres: ') && cmdline.includes(` ${database} `)),
  ];
}

/**
 * CPU per round trip of one side, from two cpuNow readings, as "client/serve/PG µs": a process
 * that started in between counts whole, one that ended in between is left out.
 */
function cpuPerRound(
  before: readonly Map<number, number>[],
  after: readonly Map<number, number>[],
  rounds: number,
): string {
  return after
    .map((now, index) => {
      let ms = 0;
      for (const [pid, ticks] of now) ms += ticks - (before[index]?.get(pid) ?? 0);
      return ((ms * 1000) / rounds).toFixed(0);
    })
    .join('/');
}

function serve(url: string): Promise<{ url: string; pid: number | undefined; stop: () => void }> {
  const child = spawn(process.execPath, [join(root, 'bin/baton.js'), 'serve', '--http', '127.0.0.1:0'], {
    env: { ...process.env, BATON_DB: url },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`baton serve exited ${code}`)));
    child.stdout.on('data', (data: Buffer) => {
      const found = /(http:\/\/\S+)/.exec(data.toString())?.[1];
      if (found !== undefined) resolve({ url: found, pid: child.pid, stop: () => child.kill('SIGINT') });
    });
  });
}

/**
 * What a real client does: one keep-alive connection per worker (node:http's Agent, as undici's
 * pool in fetch would, with less per-request machinery), every request with its bearer token.
 */
function poster(base: string, secret: string): (path: string, body: unknown) => Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const { hostname, port } = new URL(base);
  const send = (path: string, payload: string, retried: boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          hostname,
          port,
          path,
          method: 'POST',
          headers: {
            authorization: `Bearer ${secret}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            if (res.statusCode === 200) resolve();
            else reject(new Error(`${path}: ${res.statusCode} ${Buffer.concat(chunks).toString()}`));
          });
          res.on('error', reject);
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => {
        // The server closed an idle keep-alive connection (after its keepAliveTimeout, 65 s since
        // issue 17, 5 s before) just as this request reused it: the request never reached it, so
        // it is sent again once on a new connection, as node:http's documentation advises.
        if (req.reusedSocket && error.code === 'ECONNRESET' && !retried)
          send(path, payload, true).then(resolve, reject);
        else reject(error);
      });
      req.end(payload);
    });
  return (path, body) => send(path, JSON.stringify(body), false);
}

const WARM_UP_PER_WORKER = 160;

async function seed(store: Store, prefix: string, perWorker: number): Promise<void> {
  for (let worker = 0; worker < CONCURRENCY; worker++) {
    for (let index = 0; index < perWorker; index++)
      await store.tasks.add({ key: `${prefix}-${worker}-${index}` });
  }
}

export async function measureHttpVsDirect(
  tcpUrl: string,
  perWorker: number,
  reps: number,
  socketDir?: string,
): Promise<HttpVsDirectResult> {
  const url = socketDir === undefined ? tcpUrl : overSocket(tcpUrl, socketDir);
  const transport = socketDir === undefined ? 'tcp' : `unix socket ${socketDir}`;
  progress(`httpVsDirect: both sides reach PostgreSQL over ${transport}`);
  const store = await openStore(url);
  const server = await serve(url);
  try {
    const { secret } = await store.tokens.create({ scope: 'operator', name: 'bench' });
    const sessions: number[] = [];
    for (let worker = 0; worker < CONCURRENCY; worker++)
      sessions.push((await store.sessions.start({ kind: 'agent', host: 'bench', pid: worker })).id);
    const post = poster(server.url, secret);
    const overHttp = async (key: string, session: number): Promise<void> => {
      const encoded = encodeURIComponent(key);
      await post(`/v1/claims/${encoded}`, { session });
      await post(`/v1/claims/${encoded}/release`, { session, epoch: 1, outcome: 'released' });
    };
    const inProcess = async (key: string, session: number): Promise<void> => {
      const acquired = await store.claims.acquire({ key, session });
      if (!acquired.ok) throw new Error(`${key} held`);
      await store.claims.release({ key, session, epoch: acquired.claim.epoch, outcome: 'released' });
    };
    const database = new URL(url).pathname.slice(1);
    const rounds = perWorker * CONCURRENCY;
    const http: number[] = [];
    const direct: number[] = [];
    // Some 2,500 requests warm the server (see above): 160 round trips per worker at least.
    const warmPerWorker = Math.max(perWorker, WARM_UP_PER_WORKER);
    await seed(store, 'hw', warmPerWorker);
    await seed(store, 'dw', warmPerWorker);
    const warm = [
      await timedRounds(warmPerWorker, sessions, 'hw', overHttp),
      await timedRounds(warmPerWorker, sessions, 'dw', inProcess),
    ];
    progress(
      `httpVsDirect warm-up (not counted): HTTP ${warm[0]?.toFixed(0)}/s, direct ${warm[1]?.toFixed(0)}/s`,
    );
    for (let rep = 0; rep < reps; rep++) {
      await seed(store, `h${rep}`, perWorker);
      await seed(store, `d${rep}`, perWorker);
      const h0 = cpuNow(server.pid, database);
      http.push(await timedRounds(perWorker, sessions, `h${rep}`, overHttp));
      const h1 = cpuNow(server.pid, database);
      direct.push(await timedRounds(perWorker, sessions, `d${rep}`, inProcess));
      const d1 = cpuNow(server.pid, database);
      progress(
        `httpVsDirect rep ${rep + 1}: HTTP ${http.at(-1)?.toFixed(0)}/s, direct ${direct.at(-1)?.toFixed(0)}/s; ` +
          `CPU µs per round trip (bench client/baton serve/PostgreSQL): HTTP ${cpuPerRound(h0, h1, rounds)}, ` +
          `direct ${cpuPerRound(h1, d1, rounds)}`,
      );
    }
    return { http, direct, transport };
  } finally {
    server.stop();
    await store.close();
  }
}
