/**
 * The checkers of test/tidy.test.ts, as functions over a list of files, so each rule can be shown
 * to catch a violation on a synthetic file as well as run over the tree. Each returns one line per
 * violation (path and what is wrong); an empty list passes.
 */
import ts from 'typescript';
import { dirname, join, normalize } from 'node:path';

export interface SourceFile {
  /** Relative to the repository root, with forward slashes: `src/core/job.ts`. */
  readonly path: string;
  readonly text: string;
}

/** The module specifiers of a file's static imports and re-exports. */
export const imports = (text: string): string[] =>
  [...text.matchAll(/^\s*(?:import|export)[^'"]*from\s+'([^']+)'/gm)].map((m) => m[1] ?? '');

const isTest = (path: string): boolean => path.endsWith('.test.ts');

/** Files under `under` (a path prefix) importing a specifier that matches `banned`. */
export function importsMatching(
  files: readonly SourceFile[],
  under: string,
  banned: RegExp,
  { tests = true }: { tests?: boolean } = {},
): string[] {
  return files
    .filter((f) => f.path.startsWith(under) && (tests || !isTest(f.path)))
    .flatMap((f) =>
      imports(f.text)
        .filter((spec) => banned.test(spec))
        .map((spec) => `${f.path} imports ${spec}`),
    );
}

/** The coordinator (the use-case API) reaches the store through its port, never an engine. */
export const coordinatorImportsEngine = (files: readonly SourceFile[]): string[] =>
  importsMatching(files, 'src/coordinator/', /store\/(sqlite|postgres)\//);

/** src/os wraps the operating system for the layers above; it imports core at most. */
export const osImportsUpward = (files: readonly SourceFile[]): string[] =>
  importsMatching(files, 'src/os/', /\/(coordinator|daemon|cli|http|dashboard|agents|store)\//);

/**
 * Where a dynamic `import()` is allowed: loading one engine of two (its driver is heavy and the
 * other is never needed), the CLI commands that load an agent integration only when run, and the
 * HTTP server, which only `baton serve` and `baton up` load, and the daemon, which only `baton up` loads.
 */
export const DYNAMIC_IMPORTS_ALLOWED: Readonly<Record<string, string>> = {
  'src/store/open.ts': 'the engine loader: only the engine of the URL is loaded',
  'src/store/roles.ts': 'PostgreSQL roles: loads the PostgreSQL engine only when asked',
  'src/store/db-copy.ts': '`baton db copy`: loads the SQLite reader and the PostgreSQL writer only when run',
  'src/store/backup.ts': 'baton db backup: loads the SQLite engine only when asked',
  'src/cli/commands/mcp.ts': 'a lazy CLI command: the MCP server loads only for `baton mcp`',
  'src/cli/commands/hooks.ts': 'a lazy CLI command: Claude Code hooks load only when a hook runs',
  'src/cli/github-flags.ts': 'the GitHub backlog: octokit loads only for `baton github` and `--github`',
  'src/cli/commands/serve.ts': 'the HTTP server: hono, zod and prom-client load only for `serve` and `up`',
  'src/cli/commands/up.ts': 'the daemon (dispatcher, runner, agent runs) loads only for `baton up`',
  'src/cli/command-table.ts': 'the command tree: a call loads the module of the command it names only',
  'src/cli/agent-commands.ts': "the agent's command tree, likewise",
  'src/cli/run.ts': 'remote mode: the HTTP client loads only when a command goes over the API',
};

/** Dynamic `import(` in code (comments and strings aside) outside the allowed files. */
export function dynamicImports(files: readonly SourceFile[], allowed = DYNAMIC_IMPORTS_ALLOWED): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (allowed[f.path] !== undefined) continue;
    const source = ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        out.push(
          `${f.path}:${line} uses a dynamic import() (allowed only in ${Object.keys(allowed).join(', ')})`,
        );
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}

export interface FunctionSpan {
  /** `path:name`, how a finding names the function. */
  readonly key: string;
  readonly lines: number;
}

function functionName(node: ts.Node, source: ts.SourceFile): string {
  const named = (n: ts.Node): string | null => {
    if (
      (ts.isFunctionDeclaration(n) ||
        ts.isMethodDeclaration(n) ||
        ts.isFunctionExpression(n) ||
        ts.isGetAccessor(n) ||
        ts.isSetAccessor(n)) &&
      n.name !== undefined
    ) {
      return n.name.getText(source);
    }
    if (ts.isConstructorDeclaration(n)) return 'constructor';
    if (ts.isVariableDeclaration(n) || ts.isPropertyAssignment(n) || ts.isPropertyDeclaration(n)) {
      return n.name.getText(source);
    }
    return null;
  };
  for (let n: ts.Node | undefined = node; n !== undefined; n = n.parent) {
    const name = named(n);
    if (name !== null) {
      const cls = ts.findAncestor(n.parent, ts.isClassLike);
      return cls?.name !== undefined ? `${cls.name.getText(source)}.${name}` : name;
    }
  }
  return '(anonymous)';
}

/**
 * Every function with a block body, with its length in lines from its first line to its closing
 * brace (nested functions count in the outer one too, as TigerBeetle's tidy counts them).
 */
export function functionSpans(file: SourceFile): FunctionSpan[] {
  const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
  const out: FunctionSpan[] = [];
  const seen = new Map<string, number>();
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined && ts.isBlock(node.body)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.body.getEnd()).line;
      const base = `${file.path}:${functionName(node, source)}`;
      const n = (seen.get(base) ?? 0) + 1;
      seen.set(base, n);
      out.push({ key: n === 1 ? base : `${base}#${n}`, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * Functions longer than `max` lines, each named by its key (no allowlist: split the function).
 */
export function longFunctions(files: readonly SourceFile[], max: number): string[] {
  const out: string[] = [];
  for (const file of files) {
    for (const span of functionSpans(file)) {
      if (span.lines > max) out.push(`${span.key} is ${span.lines} lines (at most ${max}): split it`);
    }
  }
  return out;
}

/**
 * The values a file exports itself (not types: a type in an exported signature is part of the
 * API even when no one names it; not what it re-exports from elsewhere).
 */
export function exportedValues(text: string): string[] {
  const out = new Set<string>();
  const declared =
    /^export\s+(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(?:const|let|var|function\*?|class|enum)\s+([A-Za-z_$][\w$]*)/gm;
  for (const m of text.matchAll(declared)) out.add(m[1] ?? '');
  for (const m of text.matchAll(/^export\s+\{([^}]*)\}(?!\s*from)/gm)) {
    for (const part of (m[1] ?? '').split(',')) {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .pop()
        ?.trim();
      if (name !== undefined && name !== '' && !name.startsWith('type ')) out.add(name);
    }
  }
  out.delete('');
  return [...out];
}

const resolve = (from: string, spec: string): string | null => {
  if (!spec.startsWith('.')) return null;
  return normalize(join(dirname(from), spec))
    .replace(/\\/g, '/')
    .replace(/\.js$/, '.ts');
};

/** For each file, the names other files import from it (`*` for a namespace import). */
export function importedNames(files: readonly SourceFile[]): Map<string, Set<string>> {
  const used = new Map<string, Set<string>>();
  const add = (path: string, name: string): void => {
    const set = used.get(path) ?? new Set<string>();
    set.add(name);
    used.set(path, set);
  };
  const statement = /^\s*(?:import|export)\s+(?:type\s+)?([^'";]*?)\s*from\s+'([^']+)'/gm;
  for (const f of files) {
    for (const m of f.text.matchAll(statement)) {
      const target = resolve(f.path, m[2] ?? '');
      if (target === null) continue;
      const clause = m[1] ?? '';
      if (/\*/.test(clause) && !/\{/.test(clause)) add(target, '*');
      const braces = /\{([^}]*)\}/.exec(clause)?.[1];
      if (braces !== undefined) {
        for (const part of braces.split(',')) {
          const name = part
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0]
            ?.trim();
          if (name !== undefined && name !== '') add(target, name);
        }
      }
      const dflt = /^([A-Za-z_$][\w$]*)/.exec(clause)?.[1];
      if (dflt !== undefined && dflt !== 'type') add(target, 'default');
    }
    for (const m of f.text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) {
      const target = resolve(f.path, m[1] ?? '');
      if (target !== null) add(target, '*');
    }
  }
  return used;
}

export interface DeadExport {
  /** `path:name`. */
  readonly key: string;
  /** Imported by test files only (never by code that ships). */
  readonly testsOnly: boolean;
  /** Used in its own file, so only the `export` is dead. */
  readonly usedLocally: boolean;
}

/**
 * Value exports of `under` that no code that ships imports: none at all (`testsOnly` false), or
 * tests only (`testsOnly` true). Tests themselves, test/ and entry points are not checked.
 */
export function deadExports(
  files: readonly SourceFile[],
  under: string,
  entryPoints: readonly string[],
): DeadExport[] {
  const shipping = files.filter((f) => !isTest(f.path) && !f.path.startsWith('test/'));
  const all = importedNames(files);
  const byShipping = importedNames(shipping);
  const out: DeadExport[] = [];
  for (const f of files) {
    if (!f.path.startsWith(under) || isTest(f.path) || entryPoints.includes(f.path)) continue;
    const anyUse = all.get(f.path);
    const shipUse = byShipping.get(f.path);
    for (const name of exportedValues(f.text)) {
      if (shipUse?.has(name) === true || shipUse?.has('*') === true) continue;
      const testsOnly = anyUse?.has(name) === true || anyUse?.has('*') === true;
      const uses = f.text.match(new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`, 'g'))?.length ?? 0;
      out.push({ key: `${f.path}:${name}`, testsOnly, usedLocally: uses > 1 });
    }
  }
  return out;
}

/**
 * The property names the given files declare in interfaces and type literals, each with the kinds
 * it is declared as: `instant` (type `Instant`, nullable or optional), `number`, or `other`.
 */
export function declaredFieldKinds(
  files: readonly SourceFile[],
): Map<string, Set<'instant' | 'number' | 'other'>> {
  const out = new Map<string, Set<'instant' | 'number' | 'other'>>();
  for (const f of files) {
    const source = ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isPropertySignature(node) && node.type !== undefined && ts.isIdentifier(node.name)) {
        const parts = node.type
          .getText(source)
          .split('|')
          .map((t) => t.trim());
        const core = parts.filter((t) => t !== 'null' && t !== 'undefined');
        const kind =
          core.length !== 1
            ? 'other'
            : core[0] === 'Instant'
              ? 'instant'
              : core[0] === 'number'
                ? 'number'
                : 'other';
        const kinds = out.get(node.name.text) ?? new Set();
        kinds.add(kind);
        out.set(node.name.text, kinds);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}
