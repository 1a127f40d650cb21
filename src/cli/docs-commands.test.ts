/**
 * Every `baton …` command line the user-facing docs give (README.md, docs/*.md but the decisions)
 * and every one the CLI's own help texts give names a command that exists, and only flags that
 * command (or the global options) takes; a `--flag` named on its own in the docs is one some
 * command takes, or a known flag of another tool. A renamed flag or command leaves the docs
 * wrong silently; this names the file, the line and what no longer exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { repoRoot } from '../../test/support/cli.js';
import { COMMANDS } from './command-table.js';
import { buildProgram } from './program.js';

const root = repoRoot();

/** Flags the docs name in a code span of their own that belong to other tools, with the tool. */
const OTHER_TOOLS: ReadonlyMap<string, string> = new Map([
  ['--no-verify', 'git push'],
  ['--dangerously-skip-permissions', 'claude'],
  ['--allowedTools', 'claude'],
  ['--no-owner', 'pg_restore'],
  ['--kill-whom', 'systemctl kill'],
  ['--kill-who', 'systemctl kill (before systemd 252)'],
]);

interface Snippet {
  readonly where: string;
  readonly text: string;
}

/** The docs a user reads: the README and docs/*.md, not the decision records. */
function userDocs(): { name: string; text: string }[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs].map((name) => ({ name, text: readFileSync(join(root, name), 'utf8') }));
}

/** Each line of each fenced code block (a `\` continuation joined), and each inline code span. */
function snippets(name: string, text: string): Snippet[] {
  const out: Snippet[] = [];
  const lineOf = (index: number): number => text.slice(0, index).split('\n').length;
  const fences = /^```[^\n]*\n([\s\S]*?)^```/gm;
  for (const fence of text.matchAll(fences)) {
    const start = lineOf(fence.index);
    const lines = (fence[1] ?? '').replace(/\\\n/g, ' ').split('\n');
    lines.forEach((line, i) => out.push({ where: `${name}:${start + 1 + i}`, text: line }));
  }
  const prose = text.replace(fences, (block) => block.replace(/[^\n]/g, ' '));
  for (const span of prose.matchAll(/`([^`]+)`/g)) {
    out.push({ where: `${name}:${lineOf(span.index)}`, text: (span[1] ?? '').replace(/\n/g, ' ') });
  }
  return out;
}

/** Shell-like words of a command up to where it ends (; | & ) # > < or a backtick); quotes opaque. */
function words(text: string): string[] {
  const out: string[] = [];
  let word = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i] ?? '';
    if (char === '\\' && text[i + 1] === '|') {
      word += '\\|';
      i++;
    } else if (char === '"' || char === "'") {
      const end = closingQuote(text, i);
      word += '"…"';
      i = end;
    } else if (char === '<' && /^<[\w-]+(\.\.\.)?>/.test(text.slice(i))) {
      const end = text.indexOf('>', i);
      word += text.slice(i, end + 1);
      i = end;
    } else if (/\s/.test(char)) {
      if (word !== '') out.push(word);
      word = '';
    } else if (/[;|&)<>`]/.test(char) || (char === '#' && word === '')) {
      break;
    } else word += char;
  }
  if (word !== '') out.push(word);
  return out;
}

function closingQuote(text: string, open: number): number {
  const quote = text[open];
  for (let i = open + 1; i < text.length; i++) {
    if (quote === '"' && text[i] === '\\') i++;
    else if (text[i] === quote) return i;
  }
  return text.length;
}

const GLOBAL_WITH_VALUE = new Set(['--db', '--api', '--token']);
const flagsIn = (word: string): string[] =>
  [...word.matchAll(/(?<![\w-])--[a-zA-Z][\w-]*/g)].map((m) => m[0]);
const longFlags = (command: Command): Set<string> =>
  new Set([...command.options.map((o) => o.long ?? ''), '--help']);

/** What is wrong with the `baton …` command these words give (after `baton`), or null. */
function check(program: Command, args: readonly string[]): string | null {
  let rest = [...args];
  while (rest[0] !== undefined && rest[0].startsWith('--'))
    rest = rest.slice(GLOBAL_WITH_VALUE.has(rest[0]) ? 2 : 1);
  let command = program;
  let path = 'baton';
  for (const word of rest) {
    const sub = command.commands.find((c) => c.name() === word.split('\\|')[0]);
    if (sub !== undefined) {
      command = sub;
      path += ` ${sub.name()}`;
      rest = rest.slice(1);
      continue;
    }
    const takesWords = command.registeredArguments.length > 0 || command === program;
    if (/^[a-z][a-z-]*$/.test(word) && command.commands.length > 0 && !takesWords) {
      return `${path} has no subcommand ${word}`;
    }
    if (command === program && /^[a-z][a-z-]*$/.test(word)) return `baton has no command ${word}`;
    break;
  }
  if (command === program) return null;
  const known = new Set([...longFlags(command), ...longFlags(program)]);
  const unknown = rest.flatMap(flagsIn).filter((flag) => !known.has(flag));
  return unknown.length === 0 ? null : `${path} takes no ${unknown.join(', ')}`;
}

/** Every `baton …` in the snippet: where it is, the words after `baton`, and the line for the message. */
function commandsIn(snippet: Snippet): { where: string; args: string[]; line: string }[] {
  return [...snippet.text.matchAll(/(?<![\w./-])baton(?=\s+-*[a-z])/g)].map((found) => ({
    where: snippet.where,
    args: words(snippet.text.slice(found.index + 'baton'.length)),
    line: snippet.text.trim().slice(0, 100),
  }));
}

/** Every long flag some command (or the program) takes. */
function allFlags(command: Command, into = new Set<string>()): Set<string> {
  for (const flag of longFlags(command)) into.add(flag);
  for (const sub of command.commands) allFlags(sub, into);
  return into;
}

/** The help texts: each command's description and its options', and the program's help after. */
function helpSnippets(program: Command): Snippet[] {
  let after = '';
  program.configureOutput({ writeOut: (text) => void (after += text) });
  program.outputHelp();
  const out: Snippet[] = after.split('\n').map((line) => ({ where: 'baton --help', text: line }));
  const walk = (command: Command, path: string): void => {
    const texts = [command.description(), ...command.options.map((o) => o.description)];
    for (const text of texts) out.push({ where: `${path} --help`, text: text.replace(/`/g, ' ` ') });
    for (const sub of command.commands) walk(sub, `${path} ${sub.name()}`);
  };
  for (const sub of program.commands) walk(sub, `baton ${sub.name()}`);
  return out;
}

test('every baton command line in the docs and the help texts names a command and flags that exist', async () => {
  const program = await buildProgram(['node', 'baton', '--help'], COMMANDS);
  const all = [...userDocs().flatMap((doc) => snippets(doc.name, doc.text)), ...helpSnippets(program)];
  const commands = all.flatMap(commandsIn);
  const problems = commands.flatMap(({ where, args, line }) => {
    const problem = check(program, args);
    return problem === null ? [] : [`${where}: ${problem}: ${line}`];
  });
  assert.ok(commands.length > 300, `found ${commands.length} baton command lines: the docs were read`);
  assert.deepEqual(problems, []);
});

test('every flag the docs name on its own is one some command takes, or another tool says which', async () => {
  const flags = allFlags(await buildProgram(['node', 'baton', '--help'], COMMANDS));
  const problems: string[] = [];
  for (const doc of userDocs()) {
    for (const snippet of snippets(doc.name, doc.text)) {
      const flag = /^(--[a-zA-Z][\w-]*)/.exec(snippet.text)?.[1];
      if (flag !== undefined && !flags.has(flag) && !OTHER_TOOLS.has(flag)) {
        problems.push(`${snippet.where}: no command takes ${flag}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
