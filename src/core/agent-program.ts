/**
 * The programs an agent command runs, for `baton doctor`'s agents check: the command word of each
 * simple command (split at `;`, `&&`, `||`, `|`, `&`, newlines and parentheses), past variable
 * assignments, redirections (`2>&1`, `> log`), keywords (`if`, `!`, `time -p`) and the prefixes
 * that run the next word (`exec -a NAME`, `env -i -u NAME A=b`, `nice -n 10`, `nohup`, `command
 * -p`). Builtins (`cd`, `set -e`, `ulimit`, `umask`, `source`, …) are not programs. A command word
 * built by an expansion (`$X`, `$(…)`, a backtick, a `{{placeholder}}`) cannot be known before the
 * run and is left out. It is a scanner, not a parser: it errs towards looking nothing up, and
 * stops at a here-document (what follows `<<` is data, not commands).
 */

/** Shell builtins and keywords: found without PATH, never looked up. */
const BUILTINS = new Set([
  ...['cd', 'exec', 'export', 'test', '[', '[[', ':', 'true', 'false', 'echo', 'printf', 'exit'],
  ...['set', 'ulimit', 'umask', 'source', '.', 'read', 'eval', 'trap', 'shift', 'unset', 'wait'],
  ...['return', 'local', 'alias', 'type', 'hash', 'pwd', 'kill', 'getopts', 'break', 'continue'],
  ...['readonly', 'declare', 'typeset', 'let', 'shopt', 'pushd', 'popd', 'command'],
]);
/** Reserved words that may stand before a command word. */
const KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'do', 'while', 'until', '!', '{', '}', 'fi', 'done']);

/** The prefixes that run a later word, each with its options that take a value. */
const PREFIXES: Readonly<Record<string, { readonly valued: ReadonlySet<string> }>> = {
  exec: { valued: new Set(['-a']) },
  env: { valued: new Set(['-u', '-C', '-S', '--unset', '--chdir', '--split-string']) },
  nice: { valued: new Set(['-n', '--adjustment']) },
  nohup: { valued: new Set() },
  time: { valued: new Set() },
  command: { valued: new Set() },
};

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;
/** A redirection word: `2>&1`, `>log`, `>>`, `<in`, `&>out`; `operatorOnly` when its target is the next word. */
const REDIRECT = /^(\d*|&)(>>|>&|<&|<>|>\||>|<)(.*)$/;

/** A word as the shell reads it: its text with quotes removed, and whether any part was expanded. */
interface Word {
  readonly text: string;
  readonly expanded: boolean;
}

/** The simple commands of `command`, each as its words; a here-document ends the scan. */
function simpleCommands(command: string): Word[][] {
  const out: Word[][] = [[]];
  let text: string | null = null;
  let expanded = false;
  const end = (): void => {
    if (text !== null) out[out.length - 1]?.push({ text, expanded });
    [text, expanded] = [null, false];
  };
  for (let at = 0; at < command.length; at++) {
    const ch = command[at] ?? '';
    if (/\s/.test(ch) && ch !== '\n') end();
    else if (/[;&|()\n]/.test(ch) && !(ch === '&' && /[<>]$/.test(text ?? ''))) {
      if (ch === '&' && text === null && command[at + 1] === '>') text = '&';
      else {
        end();
        out.push([]);
      }
    } else if (ch === '#' && text === null) at = lineEnd(command, at) - 1;
    else if (ch === "'" || ch === '"') {
      const close = command.indexOf(ch, at + 1);
      const inner = command.slice(at + 1, close < 0 ? command.length : close);
      [text, expanded] = [(text ?? '') + inner, expanded || (ch === '"' && /[$`]/.test(inner))];
      at = close < 0 ? command.length : close;
    } else if (ch === '\\') [text, at] = [(text ?? '') + (command[at + 1] ?? ''), at + 1];
    else if (ch === '$' || ch === '`') {
      const skip = expansionEnd(command, at);
      [text, expanded] = [(text ?? '') + command.slice(at, skip), true];
      at = skip - 1;
    } else {
      text = (text ?? '') + ch;
      if (text.endsWith('<<')) return out; // a here-document: what follows is data
    }
  }
  end();
  return out.filter((words) => words.length > 0);
}

function lineEnd(command: string, from: number): number {
  const end = command.indexOf('\n', from);
  return end < 0 ? command.length : end;
}

/** Where `$…`, `$(…)`, `${…}` or a backtick quote starting at `from` ends (exclusive). */
function expansionEnd(command: string, from: number): number {
  const open = command[from] === '`' ? '`' : command[from + 1];
  if (open === '`') {
    const close = command.indexOf('`', from + 1);
    return close < 0 ? command.length : close + 1;
  }
  if (open === '(' || open === '{') {
    const closing = open === '(' ? ')' : '}';
    let depth = 0;
    for (let at = from + 1; at < command.length; at++) {
      if (command[at] === open) depth++;
      else if (command[at] === closing && --depth === 0) return at + 1;
    }
    return command.length;
  }
  const name = /^[A-Za-z_0-9@*#?$!-]\w*/.exec(command.slice(from + 1))?.[0] ?? '';
  return from + 1 + name.length;
}

/** The command word of one simple command, or null (none, a builtin, or one built by an expansion). */
function programOf(words: readonly Word[]): string | null {
  let prefix: string | null = null;
  for (let index = 0; index < words.length; index++) {
    const word = words[index];
    if (word === undefined) break;
    const redirect = REDIRECT.exec(word.text);
    if (redirect !== null && !word.expanded) {
      if (redirect[3] === '') index++; // `> log`: the target is the next word
      continue;
    }
    if (ASSIGNMENT.test(word.text) && (prefix === null || prefix === 'env')) continue;
    if (prefix === null && KEYWORDS.has(word.text)) continue;
    if (prefix !== null && word.text.startsWith('-') && word.text !== '-') {
      if (prefix === 'command' && /^-[vV]/.test(word.text)) return null; // a lookup, not a run
      const valued = PREFIXES[prefix]?.valued;
      if (valued?.has(word.text) === true && !word.text.includes('=')) index++;
      continue;
    }
    if (prefix === 'env' && word.text === '-') continue;
    if (Object.hasOwn(PREFIXES, word.text)) {
      prefix = word.text;
      continue;
    }
    if (word.expanded || word.text === '' || word.text.includes('{{')) return null;
    return BUILTINS.has(word.text) ? null : word.text;
  }
  return null;
}

/** The programs `command` runs, each once, in order: the words a shell would look up on PATH. */
export function commandPrograms(command: string): string[] {
  const programs = simpleCommands(command).map(programOf);
  return [...new Set(programs.filter((program): program is string => program !== null))];
}
