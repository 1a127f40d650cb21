/** One spelling per key and name: NFC at the boundary, never NFKC (decision 0054). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from './errors.js';
import { KEY_LENGTH_MAX, validateHostName, validateKey, validateLabels, validateName } from './validate.js';

const COMPOSED = 'caf\u00e9'; // é as one code point, U+00E9
const DECOMPOSED = 'cafe\u0301'; // e + U+0301 COMBINING ACUTE ACCENT

describe('keys and names in NFC', () => {
  test('the two spellings of café are one key, the composed one, whichever is typed', () => {
    assert.notEqual(COMPOSED, DECOMPOSED);
    assert.equal(validateKey(DECOMPOSED), COMPOSED);
    assert.equal(validateKey(COMPOSED), COMPOSED);
    assert.equal(validateKey(`local/${DECOMPOSED}-7`), `local/${COMPOSED}-7`);
    // Hangul jamo compose into their syllable; an Å written with a combining ring becomes U+00C5.
    assert.equal(validateKey('\u1112\u1161\u11ab-1'), '\ud55c-1');
    assert.equal(validateKey('A\u030angstr\u00f6m'), '\u00c5ngstr\u00f6m');
  });

  test('every name takes the same rule: workspace, host, project, label', () => {
    assert.equal(validateName('workspace', 'Zu\u0308rich'), 'Z\u00fcrich');
    assert.equal(validateName('project', `Le ${DECOMPOSED}`), `Le ${COMPOSED}`);
    assert.equal(validateHostName(`box-${DECOMPOSED}`), `box-${COMPOSED}`);
    assert.deepEqual(validateLabels([DECOMPOSED, COMPOSED, 'bug']), ['bug', COMPOSED]);
  });

  test('is NFC, not NFKC: compatibility characters keep their meaning', () => {
    for (const key of ['\ufb01x-ligature', 'x\u00b2', '\uff21PI-3', 'ohm-\u2460', 'half-\uff76']) {
      assert.equal(validateKey(key), key, `${JSON.stringify(key)} must not be folded`);
    }
    // U+2126 OHM SIGN is canonically U+03A9 (an NFC singleton), so it does become Ω.
    assert.equal(validateKey('R-\u2126'), 'R-\u03a9');
  });

  test('judges the length of the composed key', () => {
    const long = 'e\u0301'.repeat(KEY_LENGTH_MAX); // 400 code units, 200 once composed
    assert.equal(validateKey(long), '\u00e9'.repeat(KEY_LENGTH_MAX));
    assert.throws(() => validateKey(`${long}x`), /201 characters long; the limit is 200/);
  });

  test('still refuses the invisible characters NFC leaves in place', () => {
    for (const [key, cp] of [
      [`cafe\u200b\u0301`, 'U+200B'],
      [`cafe\u0301\u200c`, 'U+200C'],
      [`caf\u00e9\u2060`, 'U+2060'],
      [`\ufeff${DECOMPOSED}`, 'U+FEFF'],
    ] as const) {
      assert.throws(
        () => validateKey(key),
        (e: unknown) => e instanceof InvalidInputError && e.message.includes(cp),
      );
    }
  });

  test('is idempotent and leaves ASCII and emoji sequences alone', () => {
    for (const text of ['github:acme/api#1246', COMPOSED, DECOMPOSED, '👩‍💻-flow']) {
      assert.equal(validateKey(validateKey(text)), validateKey(text));
    }
    assert.equal(validateKey('JIRA-12'), 'JIRA-12');
    assert.equal(validateKey('👩‍💻-flow'), '👩‍💻-flow');
  });
});
