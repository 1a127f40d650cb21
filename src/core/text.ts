/**
 * Text from users on its way in and out. Keys and names must be visible: no control, format
 * (bidi overrides, zero-width spaces) or separator characters, judged by Unicode category; emoji
 * are welcome, with the zero-width joiner that glues an emoji sequence. On the way out, every
 * control and format character is escaped, so a title or reason cannot retitle, clear or
 * reorder a terminal (`\e]0;…\a`, `\e[2J`, U+202E).
 */

/** Code points a key may not contain: Cc, Cf, Cs and every separator (Zs, Zl, Zp). */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Z}]/u;
const ZWJ = '\u200d';
const EMOJI_END = /[\p{Extended_Pictographic}\p{Emoji_Modifier}\u{fe0f}]$/u;
const EMOJI_START = /^\p{Extended_Pictographic}/u;

/** The category a refused code point belongs to, in words. */
function categoryOf(ch: string): string {
  if (/\p{Cc}/u.test(ch)) return 'a control character';
  if (/\p{Cf}/u.test(ch)) return 'an invisible format character';
  if (/\p{Cs}/u.test(ch)) return 'a lone surrogate';
  return ch === ' ' ? 'a space' : 'a separator (an invisible space or line break)';
}

/** U+202E style, for messages. */
export function codePointName(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * The first code point of `text` that makes it partly invisible, with its position and category,
 * or null when every character shows. A zero-width joiner between two emoji is allowed; `allow`
 * lists characters the caller accepts anyway (a name may contain an ordinary space).
 */
export function findInvisible(
  text: string,
  allow: string = '',
): { readonly index: number; readonly char: string; readonly category: string } | null {
  const chars = [...text];
  let index = 0;
  for (let position = 0; position < chars.length; position++) {
    const ch = chars[position] ?? '';
    if (INVISIBLE.test(ch) && !allow.includes(ch)) {
      const joinsEmoji =
        ch === ZWJ &&
        EMOJI_END.test(chars[position - 1] ?? '') &&
        EMOJI_START.test(chars[position + 1] ?? '');
      if (!joinsEmoji) return { index, char: ch, category: categoryOf(ch) };
    }
    index += ch.length;
  }
  return null;
}

/** Characters that change what a terminal shows or does: C0, DEL, C1, format, line separators. */
const TERMINAL_UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

function escapeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  if (ch === '\n') return '\\n';
  if (ch === '\t') return '\\t';
  if (ch === '\r') return '\\r';
  if (cp <= 0xff) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp <= 0xffff) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\u{${cp.toString(16)}}`;
}

/**
 * One line of terminal text with every control and format character written as an escape
 * (`\x1b`, `\u202e`, `\n`). The zero-width joiner of an emoji sequence stays as it is.
 */
export function escapeForTerminal(line: string): string {
  const chars = [...line];
  return chars
    .map((ch, index) => {
      if (!TERMINAL_UNSAFE.test(ch)) return ch;
      const joinsEmoji =
        ch === ZWJ && EMOJI_END.test(chars[index - 1] ?? '') && EMOJI_START.test(chars[index + 1] ?? '');
      return joinsEmoji ? ch : escapeChar(ch);
    })
    .join('');
}

/** Characters JSON.stringify leaves raw that a terminal still acts on: DEL, C1, format, U+2028/9. */
const JSON_UNSAFE = /[\u007f-\u009f\p{Cf}\u2028\u2029]/gu;

/**
 * JSON text with the characters JSON.stringify leaves raw escaped as \uXXXX. Only string
 * contents can hold them (JSON's own syntax is ASCII), so the result parses to the same value.
 */
export function escapeJsonText(json: string): string {
  return json.replace(JSON_UNSAFE, (ch) =>
    [...Array(ch.length).keys()]
      .map((index) => `\\u${ch.charCodeAt(index).toString(16).padStart(4, '0')}`)
      .join(''),
  );
}

/**
 * A value as one shell word for an advice line a person copies (`baton up --host box-1`): as is
 * when it holds only characters no shell treats specially, else single-quoted.
 */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9._:@/+=,%-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A count with its noun, singular for one: `rowsText(1)` is "1 row", `rowsText(3)` "3 rows". */
export function rowsText(count: number): string {
  return `${count} ${count === 1 ? 'row' : 'rows'}`;
}

/**
 * A value someone gave, quoted for an error line: JSON, cut to its first 60 characters when
 * longer than 80 (a 10,000-character value echoed whole would bury the line's advice).
 */
export function quoted(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= 80 ? text : `${text.slice(0, 60)}… (${text.length} characters)`;
}
