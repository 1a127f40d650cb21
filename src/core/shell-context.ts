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
  for (let index = 0; index <= text.length && next < positions.length; index++) {
    while (next < positions.length && positions[next] === index) {
      out.push(contextOf(stack, heredoc, words, word === null ? index : wordStart));
      next++;
    }
    const ch = text[index] ?? '';
    const frame = stack[stack.length - 1] ?? 'top';
    const inWord = inTopWord(stack);
    const add = (char: string): void => {
      if (inWord && word !== null) word += char;
    };
    if (frame === 'comment') {
      if (ch === '\n') stack.pop();
      continue;
    }
    if (frame === 'single' || frame === 'ansi') {
      if (ch === "'") stack.pop();
      else if (frame === 'ansi' && ch === '\\') add(text[++index] ?? '');
      else add(ch);
      continue;
    }
    if (ch === '\\') {
      if (stack.length === 1 && word === null) [word, wordStart] = ['', index];
      add(text[++index] ?? '');
      continue;
    }
    if (frame === 'double') {
      if (ch === '"') stack.pop();
      else if (ch === '`') stack.push('backtick');
      else if (ch === '$') index = openDollar(text, index, stack);
      else add(ch);
      continue;
    }
    if (close(frame, text, index)) {
      if (frame === 'arith') index++;
      stack.pop();
      continue;
    }
    const atTop = stack.length === 1;
    const blank = ch === '' || /\s/.test(ch) || OPERATOR.test(ch);
    if (atTop && blank) {
      if (word !== null) words.push(word);
      word = null;
      if (ch === '<' && text[index + 1] === '<') heredoc = true;
      if (/[;&|()\n]/.test(ch)) words = [];
      continue;
    }
    if (atTop && word === null) {
      if (ch === '#') {
        stack.push('comment'); // to the end of the line; a placeholder there is inert
        continue;
      }
      [word, wordStart] = ['', index];
    }
    if (ch === "'") stack.push(text[index - 1] === '$' ? 'ansi' : 'single');
    else if (ch === '"') stack.push('double');
    else if (ch === '`') stack.push('backtick');
    else if (ch === '$') index = openDollar(text, index, stack);
    else add(ch);
  }
  return out;
}

/** Whether a character belongs to the top-level word: at the top, or inside that word's quotes. */
function inTopWord(stack: readonly Frame[]): boolean {
  const frame = stack[stack.length - 1];
  return (
    stack.length === 1 ||
    (stack.length === 2 && (frame === 'double' || frame === 'single' || frame === 'ansi'))
  );
}

/** Whether `text[index]` ends the nested frame. */
function close(frame: Frame, text: string, index: number): boolean {
  const ch = text[index];
  if (frame === 'backtick') return ch === '`';
  if (frame === 'command') return ch === ')';
  if (frame === 'param') return ch === '}';
  if (frame === 'arith') return ch === ')' && text[index + 1] === ')';
  return false;
}

/** Opens what a `$` at `index` starts; returns the index of its last character. */
function openDollar(text: string, index: number, stack: Frame[]): number {
  if (text.startsWith('$((', index)) {
    stack.push('arith');
    return index + 2;
  }
  if (text[index + 1] === '(') {
    stack.push('command');
    return index + 1;
  }
  if (text[index + 1] === '{') {
    stack.push('param');
    return index + 1;
  }
  return index;
}

function contextOf(
  stack: readonly Frame[],
  heredoc: boolean,
  words: readonly string[],
  wordStart: number,
): ShellContext {
  if (heredoc) return { kind: 'heredoc' };
  if (stack.some((frame) => frame === 'backtick' || frame === 'command')) return { kind: 'substitution' };
  if (stack.some((frame) => frame === 'param' || frame === 'arith')) return { kind: 'expansion' };
  const frame = stack[stack.length - 1];
  if (frame === 'single' || frame === 'ansi') return { kind: 'single' };
  if (frame === 'comment') return { kind: 'top', words: [], wordStart };
  return { kind: frame === 'double' ? 'double' : 'top', words: [...words], wordStart };
}
