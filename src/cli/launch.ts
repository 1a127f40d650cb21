/**
 * Starts the bundled CLI (scripts/bundle-cli.mjs) from a V8 code cache kept beside the bundle, so
 * a call does not parse and compile the same megabyte of JavaScript each time (docs/decisions/0007).
 * Node 20 caches no ES module's code; a vm.Script's it does (cachedData), so the bundle is
 * CommonJS, written as one function expression in Node's CommonJS wrapper, called here.
 *
 * A cache is only ever a copy of what compiling the bundle gives. V8 checks that its own version
 * and flags match, but of the source only its length, and a release build does not check the
 * cache's checksum; so the file carries a sha256 over the bundle's bytes, the Node version and
 * platform, and its own payload, read and compared before V8 sees it. Anything else (no file,
 * another bundle or Node, a torn or flipped byte, V8's own refusal) runs without the cache and
 * writes a fresh one after the command, to a temporary file renamed over the old one. A folder
 * that cannot be written means no cache, never an error.
 */
import { isAscii } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

/** Identifies the file's layout: MAGIC, then the 32-byte digest, then V8's payload. */
const MAGIC = Buffer.from('baton-code-cache-1\n');
const DIGEST_BYTES = 32;

interface Bundle {
  /** True when the process must end by process.exit() (src/cli/exit-open.ts). */
  main(argv: readonly string[]): Promise<boolean | undefined>;
}

type Wrapped = (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void;

/** Runs the CLI bundled at `bundlePath` with `argv`, from its code cache when that is valid. */
export async function launch(bundlePath: string, argv: readonly string[]): Promise<void> {
  const source = readFileSync(bundlePath);
  const cachePath = `${bundlePath}.cache`;
  const key = cacheKey(source);
  const cachedData = readCache(cachePath, key);
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
  if (cachedData === null || script.cachedDataRejected === true) {
    writeCache(cachePath, key, script.createCachedData());
  }
  if (exitNow === true) await exitAfterOutput();
}

/**
 * Ends the process by process.exit(), which runs no cleanup hook (so a SQLite store left open stays
 * unclosed, exit-open.ts), once what the command wrote to stdout and stderr has left the process:
 * writes to a pipe are asynchronous on some platforms.
 */
async function exitAfterOutput(): Promise<void> {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.writableLength > 0) await new Promise((resolve) => stream.once('drain', resolve));
  }
  process.exit();
}

/** What a cache must have been made from: this bundle's bytes, under this Node on this machine. */
function cacheKey(source: Buffer): Buffer {
  return createHash('sha256')
    .update(source)
    .update(`\0${process.version}\0${process.versions.v8}\0`)
    .update(`${process.platform}\0${process.arch}`)
    .digest();
}

function digestOf(key: Buffer, payload: Buffer): Buffer {
  return createHash('sha256').update(key).update(payload).digest();
}

/** V8's payload from the cache file, or null when there is none or it is not this bundle's. */
function readCache(path: string, key: Buffer): Buffer | null {
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch {
    return null;
  }
  const start = MAGIC.length + DIGEST_BYTES;
  if (file.length <= start || !file.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const payload = file.subarray(start);
  return digestOf(key, payload).equals(file.subarray(MAGIC.length, start)) ? payload : null;
}

/** Replaces the cache file whole, or leaves it as it was (a read-only folder, a full disk). */
function writeCache(path: string, key: Buffer, payload: Buffer): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, Buffer.concat([MAGIC, digestOf(key, payload), payload]), { mode: 0o644 });
    renameSync(temporary, path);
  } catch {
    try {
      rmSync(temporary, { force: true });
    } catch {
      // Nothing was written, or the folder refuses even that: there is no cache, and no harm.
    }
  }
}
