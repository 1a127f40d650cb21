/**
 * Just enough TOML to edit one table of a file the user owns (`baton mcp --install codex` in
 * ~/.codex/config.toml) without touching a byte of the rest: the file's statements (table headers
 * and key/value pairs, with where each begins and ends), read with TOML's strings, comments,
 * arrays and inline tables, so a `[` inside a multi-line string is never taken for a header. It
 * checks the structure (every value closed, no table or key defined twice), not each value's
 * grammar; a file it cannot read is refused by the caller, never rewritten.
 */
import { InvalidInputError } from '../../core/errors.js';

export interface TomlStatement {
  readonly kind: 'table' | 'array-table' | 'key';
  /** The table's name, or the key's full path (its table's name and the dotted key). */
  readonly path: readonly string[];
  /** Offsets of the statement's first character and just past its line's newline. */
  readonly start: number;
  readonly end: number;
}

const BARE = /[A-Za-z0-9_-]/;

class Reader {
  pos = 0;
  constructor(
    readonly text: string,
    readonly file: string,
  ) {}
  fail(what: string): never {
    const line = this.text.slice(0, this.pos).split('\n').length;
    throw new InvalidInputError(
      `${this.file} is not TOML Baton can read (line ${line}: ${what}); nothing was changed`,
      'fix the file, then run the command again',
    );
  }
  skipSpaces(): void {
    while (this.text[this.pos] === ' ' || this.text[this.pos] === '\t') this.pos++;
  }
  /** Past the end of the line: only spaces and a comment may come first. */
  endLine(): void {
    this.skipSpaces();
    if (this.text[this.pos] === '#') this.pos = this.lineEnd() - 1;
    if (this.text.startsWith('\r\n', this.pos)) this.pos++;
    if (this.pos < this.text.length && this.text[this.pos] !== '\n') this.fail('more after the value');
    this.pos = Math.min(this.pos + 1, this.text.length);
  }
  lineEnd(): number {
    const nl = this.text.indexOf('\n', this.pos);
    return nl === -1 ? this.text.length + 1 : nl + 1;
  }
  key(): string[] {
    const parts: string[] = [];
    for (;;) {
      this.skipSpaces();
      parts.push(this.keyPart());
      this.skipSpaces();
      if (this.text[this.pos] !== '.') return parts;
      this.pos++;
    }
  }
  keyPart(): string {
    const ch = this.text[this.pos];
    if (ch === '"' || ch === "'") {
      const from = this.pos;
      this.string();
      const raw = this.text.slice(from, this.pos);
      return ch === "'" ? raw.slice(1, -1) : (JSON.parse(raw) as string);
    }
    const from = this.pos;
    while (BARE.test(this.text[this.pos] ?? '')) this.pos++;
    if (from === this.pos) this.fail('a key was expected');
    return this.text.slice(from, this.pos);
  }
  /** One string of any of TOML's four kinds, from its opening quote. */
  string(): void {
    const quote = this.text[this.pos] ?? '';
    const multi = this.text.startsWith(quote.repeat(3), this.pos);
    const close = multi ? quote.repeat(3) : quote;
    this.pos += close.length;
    while (this.pos < this.text.length) {
      const ch = this.text[this.pos];
      if (quote === '"' && ch === '\\') this.pos += 2;
      else if (!multi && ch === '\n') this.fail('a string is not closed');
      else if (this.text.startsWith(close, this.pos)) {
        this.pos += close.length;
        while (multi && this.text[this.pos] === quote) this.pos++;
        return;
      } else this.pos++;
    }
    this.fail('a string is not closed');
  }
  /** A value: up to the end of its line once every array and inline table it opened is closed. */
  value(): void {
    let depth = 0;
    const from = this.pos;
    for (;;) {
      this.skipSpaces();
      const ch = this.text[this.pos];
      if (ch === undefined) break;
      if (ch === '"' || ch === "'") this.string();
      else if (ch === '[' || ch === '{') {
        depth++;
        this.pos++;
      } else if (ch === ']' || ch === '}') {
        if (--depth < 0) this.fail(`an unmatched ${ch}`);
        this.pos++;
      } else if (ch === '#' || ch === '\n' || ch === '\r') {
        if (depth === 0) break;
        this.pos = ch === '#' ? this.lineEnd() - 1 : this.pos + 1;
      } else this.pos++;
    }
    if (depth > 0) this.fail('an array or inline table is not closed');
    if (this.text.slice(from, this.pos).trim() === '') this.fail('a value was expected');
    this.endLine();
  }
}

/**
 * The file's tables and keys, in order; InvalidInputError naming the file when it is not TOML this
 * reads. What is under `replaced` may be defined twice (the caller replaces it whole: Baton's own
 * table, appended twice by an earlier `>>`).
 */
export function tomlStatements(text: string, file: string, replaced: readonly string[]): TomlStatement[] {
  const reader = new Reader(text, file);
  const statements: TomlStatement[] = [];
  // What is defined, by path; a new element of an array of tables starts its own (forgets its prefix).
  const seen = new Map<string, readonly string[]>();
  const define = (path: readonly string[], what: string, at: number): void => {
    const name = JSON.stringify(path);
    if (seen.has(name) && !startsWith(path, replaced)) {
      reader.pos = at; // the refusal names the line of the second definition
      reader.fail(`${what} ${path.join('.')} is defined twice`);
    }
    seen.set(name, path);
  };
  let table: string[] = [];
  while (reader.pos < text.length) {
    reader.skipSpaces();
    const start = reader.pos;
    const ch = text[reader.pos];
    if (ch === '#' || ch === '\n' || ch === '\r') {
      reader.endLine();
      continue;
    }
    if (ch === '[') {
      const array = text[reader.pos + 1] === '[';
      reader.pos += array ? 2 : 1;
      table = reader.key();
      if (!text.startsWith(array ? ']]' : ']', reader.pos)) reader.fail('a table header is not closed');
      reader.pos += array ? 2 : 1;
      reader.endLine();
      if (array) {
        for (const [name, path] of seen) if (startsWith(path, table)) seen.delete(name);
      } else define(table, 'table', start);
      statements.push({ kind: array ? 'array-table' : 'table', path: table, start, end: reader.pos });
      continue;
    }
    const path = [...table, ...reader.key()];
    if (text[reader.pos] !== '=') reader.fail('a key must be followed by =');
    reader.pos++;
    reader.value();
    define(path, 'key', start);
    statements.push({ kind: 'key', path, start, end: reader.pos });
  }
  return statements;
}

/** Whether `path` is `prefix` or below it. */
export function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  return prefix.every((part, at) => path[at] === part);
}
