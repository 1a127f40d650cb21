/**
 * A CLI call loads only what its command needs (issue 22, item 4): the bundled CLI's entry and
 * the chunks it imports statically hold the command tree and the store, not the daemon of
 * `baton up`, which is a chunk of its own imported by `baton up` alone. Read from the bundle
 * itself (scripts/bundle-cli.mjs), following its static imports as Node would.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';

const BUNDLE = join(repoRoot(), 'dist', 'src', 'cli-bundle');
/** `import { a } from "./chunk-X.js";` or `import "./chunk-X.js";`, not `import("./x.js")`. */
const STATIC_IMPORT = /^import\s*(?:[^'"()]*?\sfrom\s*)?["'](\.\/[^"']+)["'];?$/gm;

/** The bundle files a start of the CLI loads before any command runs. */
function loadedAtStart(entry = 'main.js', seen = new Set<string>()): Set<string> {
  seen.add(entry);
  for (const [, path] of readFileSync(join(BUNDLE, entry), 'utf8').matchAll(STATIC_IMPORT)) {
    const file = (path ?? '').slice(2);
    if (!seen.has(file)) loadedAtStart(file, seen);
  }
  return seen;
}

test("the CLI's start loads no part of the daemon; `baton up` imports it on its own", () => {
  const files = [...loadedAtStart()];
  assert.ok(files.length > 1, `the entry imports its shared chunks statically: ${files.join(', ')}`);
  const text = (file: string): string => readFileSync(join(BUNDLE, file), 'utf8');
  for (const file of files) {
    // How esbuild writes the daemon's entry point and its classes (`class X` or `X = class`).
    for (const marker of [
      /function runUp\(/,
      /\b(class AgentRun|AgentRun = class)\b/,
      /\b(class Dispatcher|Dispatcher = class)\b/,
    ]) {
      assert.ok(!marker.test(text(file)), `${file}, loaded at every start, holds ${marker.source}`);
    }
  }
  const daemon = text('main.js').match(/import\(["'](\.\/up-[^"']+)["']\)/);
  assert.ok(daemon?.[1] !== undefined, 'main.js imports the daemon chunk dynamically');
  assert.ok(text(daemon[1].slice(2)).includes('function runUp('), 'the daemon chunk holds runUp');
});
