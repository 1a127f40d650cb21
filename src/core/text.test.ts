/** Visible keys and names, and text that cannot act on a terminal. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from './errors.js';
import { escapeForTerminal, escapeJsonText, quoted, rowsText } from './text.js';
import { validateInteger, validateKey, validateName, validateText, validateTitle } from './validate.js';

describe('keys and names by Unicode category', () => {
  test('refuses bidi overrides, zero-width spaces and a lone no-break space in keys, naming the character', () => {
    for (const [key, cp] of [
      ['evil\u202etxt.exe', 'U+202E'],
      ['zero\u200bwidth', 'U+200B'],
      ['\u00a0', 'U+00A0'],
      ['word\u2028break', 'U+2028'],
      ['soft\u00adhyphen', 'U+00AD'],
      ['ideographic\u3000space', 'U+3000'],
      ['esc\u001b[2J', 'U+001B'],
      ['c1\u009bx', 'U+009B'],
    ] as const) {
      assert.throws(
        () => validateKey(key),
        (e: unknown) => e instanceof InvalidInputError && e.message.includes(cp),
      );
    }
  });

  test('accepts emoji, emoji sequences joined by zero-width joiners, and scripts other than Latin', () => {
    for (const key of ['🚀-launch', 'fix-👩‍💻-flow', 'family-👨‍👩‍👧', 'ключ-7', '課題-12', 'flag-🇫🇷']) {
      assert.equal(validateKey(key), key);
    }
  });

  test('refuses a zero-width joiner that joins no emoji', () => {
    assert.throws(() => validateKey('a\u200db'), /U\+200D/);
  });

  test('lets names keep single ordinary spaces but no other separator or format character', () => {
    assert.equal(validateName('project', 'Road map'), 'Road map');
    assert.throws(() => validateName('project', 'Road\u00a0map'), /U\+00A0/);
    assert.throws(() => validateName('project', 'Road\u2066map'), /U\+2066/);
  });

  test('refuses control characters in free text but keeps line breaks and tabs', () => {
    assert.equal(validateText('reason', 'line one\n\tline two', 500), 'line one\n\tline two');
    assert.throws(() => validateText('reason', 'x\u001b]0;pwned\u0007', 500), /U\+001B/);
    assert.throws(() => validateText('reason', 'c1\u0085', 500), /U\+0085/);
  });
});

describe('terminal output', () => {
  test('escapes the retitling and screen-clearing sequences a reason once carried', () => {
    const text = escapeForTerminal('done \u001b]0;pwned\u0007\u001b[2J');
    assert.equal(text, 'done \\x1b]0;pwned\\x07\\x1b[2J');
    assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(text));
  });

  test('escapes bidi overrides and C1 controls but leaves emoji sequences whole', () => {
    assert.equal(escapeForTerminal('a\u202eb\u009bc'), 'a\\u202eb\\x9bc');
    assert.equal(escapeForTerminal('👩‍💻 ok'), '👩‍💻 ok');
  });

  test('leaves JSON valid and equal in value while escaping what JSON.stringify leaves raw', () => {
    const value = { reason: 'x\u007f\u009b\u202e\u2028y', key: '👩‍💻' };
    const text = escapeJsonText(JSON.stringify(value));
    assert.ok(!/[\u007f-\u009f\u202e\u2028]/.test(text));
    assert.deepEqual(JSON.parse(text), value);
  });

  test('counts rows in words: one row, any other number of rows', () => {
    assert.deepEqual([0, 1, 2, 1000].map(rowsText), ['0 rows', '1 row', '2 rows', '1000 rows']);
  });

  test('refuses half of a character (a lone surrogate) in free text and titles, and takes whole ones', () => {
    for (const half of ['\ud800', 'a\udfffb', '\ud83d']) {
      assert.throws(
        () => validateText('reason', half, 100),
        /reason holds half of a character \(the lone surrogate U\+D/,
      );
      assert.throws(() => validateTitle(half), /title holds half of a character/);
    }
    assert.equal(validateText('reason', 'done 👩‍💻', 100), 'done 👩‍💻');
    assert.equal(validateTitle('ship it 🚀'), 'ship it 🚀');
  });

  test('quotes a value for an error line, cutting a long one to its start and length', () => {
    assert.equal(quoted('abc'), '"abc"');
    assert.equal(quoted(undefined), 'undefined');
    assert.equal(quoted('x'.repeat(78)), `"${'x'.repeat(78)}"`);
    assert.equal(quoted('x'.repeat(10_000)), `"${'x'.repeat(59)}… (10002 characters)`);
    assert.throws(
      () => validateInteger('limit', 'y'.repeat(10_000), 0, 9),
      (error: Error) => error.message.length < 200 && /got "y{59}… \(10002 characters\)$/.test(error.message),
    );
  });
});
