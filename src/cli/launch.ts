/**
 * Starts the bundled CLI (scripts/bundle-cli.mjs) from a V8 code cache kept beside the bundle, so
 * a call does not parse and compile the same megabyte of JavaScript each time (docs/decisions/0007).
 * Node 20 caches no ES module's code; a vm.Script's it does (cachedData), so the bundle is
 * CommonJS, written as one function expression in Node's CommonJS wrapper, called here.
 *
 * A cache is only ever a copy of what compiling the bundle gives. V8 checks that its own version
 * and flags match, but of the source only its length. So the file names the bundle it was made
 * from by the bundle's file identity (device, inode, size, modification and change times, to the
 * nanosecond), with the Node version and platform: any write to the bundle changes its change time,
 * which no one can set back. Hashing the bytes instead cost every call 4 ms and node:crypto's load.
 * A cache is written only for a bundle unchanged for SETTLE_MS, so a file system whose times are
 * coarse cannot show a rewrite within one tick as the same file. A release build of V8 does not
 * check a cache's checksum (a flipped byte would run), so the file holds V8's payload twice and a
 * call takes it only when both copies are equal: a comparison of memory, where a hash or V8's own
 * checksum (node:crypto, node:v8) cost a call more to load than this costs to read. Anything else
 * (no file, another bundle or Node, a torn or flipped byte, V8's own refusal) runs without the
 * cache and writes a fresh one after the command, to a temporary file renamed over the old one. A
 * folder that cannot be written means no cache, never an error. There is one cache per bundle
 * (bundleFor) and way a call reaches Baton (cacheFor): the build makes each bundle's SQLite one,
 * the first settled call each other one.
 */
import { isAscii } from 'node:buffer';
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';
import { POSTGRES_URL } from '../store/db-url.js';
import { AGENT_COMMAND_NAMES, commandNamed } from './command-named.js';

/** Identifies the file's layout: MAGIC, the bundle's identity and a newline, then V8's payload twice. */
const MAGIC = 'baton-code-cache-2\n';
/** How long a bundle must have been left unchanged before a cache is made from it (milliseconds). */
const SETTLE_MS = 2_000;

interface Bundle {
  /**
   * True when the process must end by process.exit() (src/cli/exit-open.ts), said once what the
   * command wrote has left the process.
   */
  main(argv: readonly string[]): Promise<boolean | undefined>;
}

type Wrapped = (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void;

/**
 * The bundle in `dir` (scripts/bundle-cli.mjs) that runs the command `argv` names: the agent's
 * (agent.cjs, its commands only) for a command agents run over and over, else the whole CLI
 * (main.cjs), which also answers help, an unknown command and anything unclear, as before. Each has
 * its own caches: a claim's cache then holds none of the other commands' functions.
 */
export function bundleFor(dir: string, argv: readonly string[]): string {
  const named = commandNamed(argv.slice(2));
  return join(dir, named !== null && AGENT_COMMAND_NAMES.has(named) ? 'agent.cjs' : 'main.cjs');
}

/** Runs the CLI bundled at `bundlePath` with `argv`, from its code cache when that is valid. */
export async function launch(bundlePath: string, argv: readonly string[]): Promise<void> {
  // Before the read: a write after it shows in the times, and the cache is then made for a bundle
  // that is no longer there, which no call will take.
  const bundle = identity(bundlePath);
  const source = readFileSync(bundlePath);
  const cachePath = `${bundlePath}${cacheFor(argv, process.env)}.cache`;
  const cachedData = readCache(cachePath, bundle.key);
  // A one-byte string when the bundle is ASCII, as esbuild writes it but for a few characters.
  const text = isAscii(source) ? source.toString('latin1') : source.toString('utf8');
  const script = new Script(text, {
    filename: bundlePath,
    ...(cachedData === null ? {} : { cachedData }),
  });
  const module = { exports: {} };
  const wrapped = script.runInThisContext() as Wrapped;
  wrapped.call(
    module.exports,
    module.exports,
    createRequire(bundlePath),
    module,
    bundlePath,
    dirname(bundlePath),
  );
  const exitNow = await (module.exports as Bundle).main(argv);
  // After the command, so that the functions it compiled on the way are in the cache too.
  if ((cachedData === null || script.cachedDataRejected === true) && bundle.settled) {
    writeCache(cachePath, bundle.key, script.createCachedData());
  }
  // process.exit() runs no cleanup hook (so a SQLite store left open stays unclosed, exit-open.ts);
  // the bundle says true only once what it wrote has left the process (stdio.ts).
  if (exitNow === true) process.exit();
}

/**
 * Which of the bundle's caches a call takes: one per way to reach Baton, since each compiles its
 * own code on top of the command's (pg and the PostgreSQL engine, or the HTTP client). A cache
 * holds what the call that made it ran: a SQLite claim's (made by the build) saves a PostgreSQL
 * claim none of pg's compiling, and a cache holding both costs a SQLite call its larger payload.
 * Read as the CLI reads its options (run.ts, remote-target.ts): --db wins, then --api or
 * BATON_URL, then BATON_DB. A wrong guess costs time, never a wrong answer: any cache of a bundle
 * runs any of its commands.
 */
function cacheFor(argv: readonly string[], env: NodeJS.ProcessEnv): '' | '.pg' | '.api' {
  const postgres = (url: string | undefined): boolean => POSTGRES_URL.test(url?.trim() ?? '');
  const db = optionValue(argv, '--db');
  if (db !== undefined) return postgres(db) ? '.pg' : '';
  if (optionValue(argv, '--api') !== undefined || (env['BATON_URL'] ?? '') !== '') return '.api';
  return postgres(env['BATON_DB']) ? '.pg' : '';
}

/** The value given to `--name value` or `--name=value` before any `--`. */
function optionValue(argv: readonly string[], name: string): string | undefined {
  for (let index = 2; index < argv.length && argv[index] !== '--'; index++) {
    const arg = argv[index] ?? '';
    if (arg === name) return argv[index + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

/** What a cache must have been made from: this bundle file, under this Node on this machine. */
function identity(bundlePath: string): { key: string; settled: boolean } {
  const stat = statSync(bundlePath, { bigint: true });
  const file = [stat.dev, stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs].join(':');
  const node = [process.version, process.versions.v8, process.platform, process.arch].join(':');
  return {
    key: `${MAGIC}${file} ${node}\n`,
    settled: BigInt(Date.now()) - stat.ctimeNs / 1_000_000n >= SETTLE_MS,
  };
}

/** V8's payload from the cache file, or null when there is none or it is not this bundle's. */
function readCache(path: string, key: string): Buffer | null {
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch {
    return null;
  }
  if (file.length <= key.length || file.toString('latin1', 0, key.length) !== key) return null;
  const half = (file.length - key.length) / 2;
  const payload = file.subarray(key.length, key.length + half);
  return Number.isInteger(half) && payload.equals(file.subarray(key.length + half)) ? payload : null;
}

/** Replaces the cache file whole, or leaves it as it was (a read-only folder, a full disk). */
function writeCache(path: string, key: string, payload: Buffer): void {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    writeFileSync(temporary, Buffer.concat([Buffer.from(key, 'latin1'), payload, payload]), { mode: 0o644 });
    renameSync(temporary, path);
  } catch {
    try {
      rmSync(temporary, { force: true });
    } catch {
      // Nothing was written, or the folder refuses even that: there is no cache, and no harm.
    }
  }
}
