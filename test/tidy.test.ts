/**
 * Keeps the architecture honest (after TigerBeetle's tidy.zig): the dependency rule between
 * layers, a pure core, file, line and function sizes that stay readable, dynamic imports only
 * where they are meant, no dead exports, no one-letter names and no shadowed names (ESLint's
 * id-length and @typescript-eslint/no-shadow, set in eslint.config.js). The checkers are in test/support/tidy-rules.ts; every rule added since
 * issue 16 is also shown to catch a violation on a synthetic file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint, Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import {
  coordinatorImportsEngine,
  deadExports,
  dynamicImports,
  imports,
  longFunctions,
  osImportsUpward,
  type SourceFile,
} from './support/tidy-rules.js';
import { DEAD_EXPORTS_ALLOWED } from './tidy-allowlists.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const src = join(root, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const read = (path: string): SourceFile => ({ path: relative(root, path), text: readFileSync(path, 'utf8') });
const files = sources(src).map(read);
/** Everything that may import from src: for dead exports. */
const everything = [
  ...files,
  ...['test', 'bench', 'scripts'].flatMap((dir) => sources(join(root, dir)).map(read)),
];
const shipping = files.filter((f) => !f.path.endsWith('.test.ts'));

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

test('keeps the coordinator on the store port: it never imports an engine', () => {
  assert.deepEqual(coordinatorImportsEngine(files), []);
});

test('the coordinator rule catches an engine import', () => {
  const bad = {
    path: 'src/coordinator/x.ts',
    text: "import { openSqliteStore } from '../store/sqlite/sqlite-store.js';\n",
  };
  assert.deepEqual(coordinatorImportsEngine([bad]), [
    'src/coordinator/x.ts imports ../store/sqlite/sqlite-store.js',
  ]);
});

test('keeps src/os below the layers that use it: it imports core at most', () => {
  assert.deepEqual(osImportsUpward(files), []);
});

test('the os rule catches an import from a layer above', () => {
  const bad = [
    {
      path: 'src/os/x.ts',
      text: "import type { Store } from '../store/store.js';\nimport { a } from './y.js';\n",
    },
    { path: 'src/os/y.ts', text: "export { runUp } from '../daemon/up.js';\n" },
  ];
  assert.deepEqual(osImportsUpward(bad), [
    'src/os/x.ts imports ../store/store.js',
    'src/os/y.ts imports ../daemon/up.js',
  ]);
});

test('allows dynamic import() only in the engine loader and the lazy CLI commands', () => {
  assert.deepEqual(dynamicImports(files), []);
});

test('the dynamic import rule catches import() outside the allowed files, not in comments or strings', () => {
  const text =
    "// await import('./a.js') in a comment\nconst s = \"import('x')\";\nconst m = await import('./b.js');\n";
  assert.deepEqual(dynamicImports([{ path: 'src/cli/x.ts', text }]), [
    'src/cli/x.ts:3 uses a dynamic import() (allowed only in src/store/open.ts, src/store/roles.ts, ' +
      'src/store/db-copy.ts, src/store/backup.ts, ' +
      'src/cli/commands/mcp.ts, src/cli/commands/hooks.ts, src/cli/github-flags.ts, src/cli/commands/serve.ts, ' +
      'src/cli/commands/up.ts, src/cli/command-table.ts, src/cli/agent-commands.ts, src/cli/run.ts)',
  ]);
  assert.deepEqual(dynamicImports([{ path: 'src/store/open.ts', text }]), []);
});

test('keeps every function that ships to 70 lines', () => {
  const code = shipping.filter((file) => !file.path.startsWith('src/store/conformance/'));
  assert.deepEqual(longFunctions(code, 70), []);
});

test('the function-length rule catches a long function and a long method', () => {
  const body = (count: number): string =>
    Array.from({ length: count }, (_, index) => `  const v${index} = ${index};`).join('\n');
  const file = {
    path: 'src/x.ts',
    text: `export function long() {\n${body(69)}\n}\nclass C {\n  m() {\n${body(60)}\n  }\n}\n`,
  };
  assert.deepEqual(longFunctions([file], 70), ['src/x.ts:long is 71 lines (at most 70): split it']);
  assert.deepEqual(longFunctions([file], 60), [
    'src/x.ts:long is 71 lines (at most 60): split it',
    'src/x.ts:C.m is 62 lines (at most 60): split it',
  ]);
  assert.deepEqual(longFunctions([file], 71), []);
});

test('finds no dead exports: every exported value is imported by code that ships, or allowlisted', () => {
  const found = deadExports(everything, 'src/', ['src/main.ts']).map((d) => d.key);
  const allowed = Object.keys(DEAD_EXPORTS_ALLOWED);
  assert.deepEqual(
    found.filter((key) => !allowed.includes(key)),
    [],
    'dead exports: delete them, or drop `export`',
  );
  assert.deepEqual(
    allowed.filter((key) => !found.includes(key)),
    [],
    'allowlisted exports now imported: remove them',
  );
});

test('the dead-export rule catches an export no one imports, and one only tests import', () => {
  const files: SourceFile[] = [
    {
      path: 'src/a.ts',
      text: 'export const used = 1;\nexport function unused() {}\nexport const forTests = 2;\n',
    },
    { path: 'src/b.ts', text: "import { used } from './a.js';\n" },
    { path: 'src/a.test.ts', text: "import { forTests } from './a.js';\n" },
  ];
  assert.deepEqual(deadExports(files, 'src/', []), [
    { key: 'src/a.ts:unused', testsOnly: false, usedLocally: false },
    { key: 'src/a.ts:forTests', testsOnly: true, usedLocally: false },
  ]);
});

/** The entry eslint.config.js gives rule `name` for a file at `path`; undefined where it does not apply. */
async function configuredRule(
  eslint: ESLint,
  path: string,
  name: string,
): Promise<Linter.RuleEntry | undefined> {
  const config = (await eslint.calculateConfigForFile(join(root, path))) as Linter.Config | undefined;
  return config?.rules?.[name];
}

/** A rule as configured, run on a snippet by ESLint's own Linter (no type information): `line:column message`. */
function lintSnippet(lines: readonly string[], name: string, rule: Linter.RuleEntry, path: string): string[] {
  const linter = new Linter({ configType: 'flat' });
  const config = {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: { [name]: rule },
  };
  return linter
    .verify(lines.join('\n'), [config], path)
    .map((message) => `${message.line}:${message.column} ${message.message}`);
}

test('the one-letter-name rule (ESLint id-length) covers shipping code and the conformance suite, not tests, and catches a violation', async () => {
  const eslint = new ESLint({ cwd: root });
  const ruleFor = (path: string) => configuredRule(eslint, path, 'id-length');
  const rule = await ruleFor('src/core/x.ts');
  assert.ok(rule !== undefined, 'eslint.config.js applies id-length to src/core');
  assert.equal(await ruleFor('src/core/x.test.ts'), undefined);
  assert.deepEqual(
    await ruleFor('src/store/conformance/x.ts'),
    rule,
    'the conformance suite holds to the same rule',
  );
  const snippet = [
    'export function f(options: { x: number }, _: number): number[] {',
    '  const total = options.x;',
    '  return [total].map((v) => v + 1);',
    '}',
  ];
  assert.deepEqual(lintSnippet(snippet, 'id-length', rule, 'src/core/x.ts'), [
    "1:17 Identifier name 'f' is too short (< 2).",
    "3:23 Identifier name 'v' is too short (< 2).",
  ]);
});

test('the no-shadow rule covers shipping code and the conformance suite, not tests, and catches a violation', async () => {
  const eslint = new ESLint({ cwd: root });
  const ruleFor = (path: string) => configuredRule(eslint, path, '@typescript-eslint/no-shadow');
  const rule = await ruleFor('src/cli/x.ts');
  assert.ok(rule !== undefined, 'eslint.config.js applies @typescript-eslint/no-shadow to src/cli');
  assert.equal(await ruleFor('src/cli/x.test.ts'), undefined);
  assert.deepEqual(
    await ruleFor('src/store/conformance/x.ts'),
    rule,
    'the conformance suite holds to it too',
  );
  // An inner `total` hides the outer one; `count` hides nothing.
  const snippet = [
    'export function sum(rows: number[][]): number {',
    '  let total = 0;',
    '  for (const row of rows) {',
    '    const total = row.reduce((count, value) => count + value, 0);',
    '    console.log(total);',
    '  }',
    '  return total;',
    '}',
  ];
  assert.deepEqual(lintSnippet(snippet, '@typescript-eslint/no-shadow', rule, 'src/cli/x.ts'), [
    "4:11 'total' is already declared in the upper scope on line 2 column 7.",
  ]);
});
