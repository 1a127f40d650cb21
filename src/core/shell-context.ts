/**
 * Where a position of a POSIX shell command stands, for placing template placeholders safely: at
 * the top level or inside double quotes (where `"${VAR}"` / `${VAR}` expand to data), or
 * somewhere an expansion is literal or becomes code (single quotes, backticks, `$(…)`, `${…}`,
 * `$((…))`, a here-document). For top-level and double-quoted positions it also says which words
 * of the simple command come before, so a caller can tell an argument from the command string of
 * `sh -c`. It is a scanner, not a parser: it errs towards "unsafe", never towards "safe".
 */

export type ShellContext =
  | { readonly kind: 'top' | 'double'; readonly words: readonly string[]; readonly wordStart: number }
  | { readonly kind: 'single' | 'substitution' | 'expansion' | 'heredoc' };

type Frame = 'top' | 'double' | 'single' | 'ansi' | 'backtick' | 'command' | 'param' | 'arith' | 'comment';

const OPERATOR = /[;&|()<>\n]/;

/** The context of each position in `positions` (sorted ascending) within `text`. */
export function shellContexts(text: string, positions: readonly number[]): ShellContext[] {
  const out: ShellContext[] = [];
  const stack: Frame[] = ['top'];
  let words: string[] = []; // the completed words of the current simple command
  let word: string | null = null; // the top-level word being read, its quotes left out
  let wordStart = 0;
  let heredoc = false;
  let next = 0;
  for (let i = 0; i <= text.length && next < positions.length; i++) {
    while (next < positions.length && positions[next] === i) {
      out.push(contextOf(stack, heredoc, words, word === null ? i : wordStart));
      next++;
    }
    const ch = text[i] ?? '';
    const frame = stack[stack.length - 1] ?? 'top';
    // Characters of the top-level word, including what its quotes enclose.
    const inWord = stack.length === 1 || (stack.length === 2 && ['double', 'single', 'ansi'].includes(frame));
    const add = (c: string): void => {
      if (inWord && word !== null) word += c;
    };
    if (frame === 'comment') {
      if (ch === '\n') stack.pop();
      continue;
    }
    if (frame === 'single' || frame === 'ansi') {
      if (ch === "'") stack.pop();
      else if (frame === 'ansi' && ch === '\\') add(text[++i] ?? '');
      else add(ch);
      continue;
    }
    if (ch === '\\') {
      if (stack.length === 1 && word === null) [word, wordStart] = ['', i];
      add(text[++i] ?? '');
      continue;
    }
    if (frame === 'double') {
      if (ch === '"') stack.pop();
      else if (ch === '`') stack.push('backtick');
      else if (ch === '$') i = openDollar(text, i, stack);
      else add(ch);
      continue;
    }
    if (close(frame, text, i)) {
      if (frame === 'arith') i++;
      stack.pop();
      continue;
    }
    const atTop = stack.length === 1;
    const blank = ch === '' || /\s/.test(ch) || OPERATOR.test(ch);
    if (atTop && blank) {
      if (word !== null) words.push(word);
      word = null;
      if (ch === '<' && text[i + 1] === '<') heredoc = true;
      if (/[;&|()\n]/.test(ch)) words = [];
      continue;
    }
    if (atTop && word === null) {
      if (ch === '#') {
        stack.push('comment'); // to the end of the line; a placeholder there is inert
        continue;
      }
      [word, wordStart] = ['', i];
    }
    if (ch === "'") stack.push(text[i - 1] === '$' ? 'ansi' : 'single');
    else if (ch === '"') stack.push('double');
    else if (ch === '`') stack.push('backtick');
    else if (ch === '$') i = openDollar(text, i, stack);
    else add(ch);
  }
  return out;
}

/** Whether `text[i]` ends the nested frame. */
function close(frame: Frame, text: string, i: number): boolean {
  const ch = text[i];
  if (frame === 'backtick') return ch === '`';
  if (frame === 'command') return ch === ')';
  if (frame === 'param') return ch === '}';
  if (frame === 'arith') return ch === ')' && text[i + 1] === ')';
  return false;
}

/** Opens what a `$` at `i` starts; returns the index of its last character. */
function openDollar(text: string, i: number, stack: Frame[]): number {
  if (text.startsWith('$((', i)) {
    stack.push('arith');
    return i + 2;
  }
  if (text[i + 1] === '(') {
    stack.push('command');
    return i + 1;
  }
  if (text[i + 1] === '{') {
    stack.push('param');
    return i + 1;
  }
  return i;
}

function contextOf(
  stack: readonly Frame[],
  heredoc: boolean,
  words: readonly string[],
  wordStart: number,
): ShellContext {
  if (heredoc) return { kind: 'heredoc' };
  if (stack.some((f) => f === 'backtick' || f === 'command')) return { kind: 'substitution' };
  if (stack.some((f) => f === 'param' || f === 'arith')) return { kind: 'expansion' };
  const frame = stack[stack.length - 1];
  if (frame === 'single' || frame === 'ansi') return { kind: 'single' };
  if (frame === 'comment') return { kind: 'top', words: [], wordStart };
  return { kind: frame === 'double' ? 'double' : 'top', words: [...words], wordStart };
}
