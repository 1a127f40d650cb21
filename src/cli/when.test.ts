import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWhen } from './when.js';

const NOW = Date.parse('2026-06-15T12:00:00Z');
const when = (raw: string): number | undefined => parseWhen('--since', raw, () => NOW);

test('parseWhen reads the documented forms', () => {
  assert.equal(when('2026-01-31'), Date.parse('2026-01-31T00:00:00Z'));
  assert.equal(when('2026-01-31T10:00:00Z'), Date.parse('2026-01-31T10:00:00Z'));
  assert.equal(when('2026-01-31T10:00:00.250+02:00'), Date.parse('2026-01-31T08:00:00.250Z'));
  assert.equal(when('2026-01-31T10:00'), new Date(2026, 0, 31, 10, 0).getTime(), 'no zone: local time');
  assert.equal(when('2024-02-29'), Date.parse('2024-02-29T00:00:00Z'));
  assert.equal(when('0d'), NOW);
  assert.equal(when('30d'), NOW - 30 * 86_400_000);
  assert.equal(when(' 2026-01-31 '), Date.parse('2026-01-31T00:00:00Z'));
  assert.equal(parseWhen('--since', undefined), undefined);
});

test('parseWhen refuses what is not an ISO date, an impossible one and an absurd duration', () => {
  for (const raw of [
    '7',
    'March 7',
    '2026-02-31',
    '2025-02-29',
    '2026-13-01',
    '2026-01-31T24:00',
    '2026-1-5',
    '2026-01-31 10:00',
    '2026-01-31T10:00+25:00',
    'yesterday',
    '',
    '-3d',
  ]) {
    assert.throws(
      () => when(raw),
      (error: Error) => {
        assert.equal(error.message, `--since ${JSON.stringify(raw)} is not a date`);
        return true;
      },
      raw,
    );
  }
  assert.equal(when('36500d'), NOW - 36_500 * 86_400_000);
  assert.throws(() => when('99999999d'), /^InvalidInputError: --since "99999999d" is too far back$/);
});
