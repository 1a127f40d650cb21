/**
 * Keeps the architecture honest (after TigerBeetle's tidy.zig): the dependency rule between
 * layers, a pure core, and file and line sizes that stay readable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const src = join(root, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(src).map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }));
const imports = (text: string): string[] =>
  [...text.matchAll(/^\s*(?:import|export)[^'"]*from\s+'([^']+)'/gm)].map((m) => m[1] ?? '');

test('keeps src/core pure: no I/O, no clock reads, no imports from outer layers', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/core/') && !x.path.endsWith('.test.ts'))) {
    for (const spec of imports(f.text)) {
      assert.ok(spec.startsWith('./'), `${f.path} imports ${spec}`);
    }
    for (const banned of ['Date.now', 'new Date(', 'process.', 'setTimeout', 'Math.random']) {
      assert.ok(!f.text.includes(banned), `${f.path} uses ${banned}`);
    }
  }
});

test('keeps the adapters away from the engines', () => {
  for (const f of files.filter((x) => /^src\/(cli|http|dashboard|agents|github)\//.test(x.path))) {
    for (const spec of imports(f.text)) {
      assert.ok(!/store\/(sqlite|postgres)/.test(spec), `${f.path} imports engine ${spec}`);
    }
  }
});

test('keeps the dashboard on the HTTP API only', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/dashboard/'))) {
    for (const spec of imports(f.text)) {
      assert.ok(!/\/(store|coordinator)\//.test(spec), `${f.path} imports ${spec}`);
    }
  }
});

test('keeps the store port free of coordinator, daemon and adapters', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/store/') && !x.path.endsWith('.test.ts'))) {
    for (const spec of imports(f.text)) {
      assert.ok(
        !/\/(coordinator|daemon|cli|http|dashboard|agents|github)\//.test(spec),
        `${f.path} imports ${spec}`,
      );
    }
  }
});

test('keeps the use-case API free of the daemon: the daemon uses the API, never the reverse', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/coordinator/'))) {
    for (const spec of imports(f.text)) {
      assert.ok(!/\/(daemon|cli|http|dashboard|agents|github)\//.test(spec), `${f.path} imports ${spec}`);
    }
  }
});

test('keeps the daemon away from the adapters', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/daemon/'))) {
    for (const spec of imports(f.text)) {
      assert.ok(!/\/(cli|http|dashboard|agents|github)\//.test(spec), `${f.path} imports ${spec}`);
    }
  }
});

test('keeps the agent integrations (MCP server, Claude Code hooks) off the daemon and the other adapters', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/agents/') && !x.path.endsWith('.test.ts'))) {
    for (const spec of imports(f.text)) {
      assert.ok(!/\/(daemon|cli|http|dashboard)\//.test(spec), `${f.path} imports ${spec}`);
    }
  }
});

test('keeps the GitHub adapter off the daemon and the other adapters: `baton up` is handed its duties', () => {
  for (const f of files.filter((x) => x.path.startsWith('src/github/'))) {
    for (const spec of imports(f.text)) {
      assert.ok(!/\/(daemon|cli|http|dashboard|agents)\//.test(spec), `${f.path} imports ${spec}`);
    }
  }
});

test('keeps source files under 400 lines and lines under 120 columns', () => {
  for (const f of files) {
    const lines = f.text.split('\n');
    assert.ok(lines.length <= 400, `${f.path} has ${lines.length} lines`);
    lines.forEach((line, i) => assert.ok(line.length <= 120, `${f.path}:${i + 1} is ${line.length} columns`));
  }
});
