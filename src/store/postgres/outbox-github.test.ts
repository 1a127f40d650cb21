/**
 * The GitHub outbox's job triggers fire on `jobs.github` (migration 0025), which the statements
 * inserting jobs set from their task's key. A statement added later that inserted jobs without it
 * would leave its github: jobs out of the outbox silently (the column defaults to false, for
 * seeded rows), so every insert into jobs in the store's code must name the column.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const source = join(
  fileURLToPath(new URL('.', import.meta.url)),
  '..',
  '..',
  '..',
  '..',
  'src/store/postgres',
);

/** Each `INSERT INTO jobs (…)` column list in the store's code (not its migrations or tests). */
function jobInserts(): { file: string; columns: string }[] {
  const found: { file: string; columns: string }[] = [];
  for (const file of readdirSync(source)) {
    if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue;
    const text = readFileSync(join(source, file), 'utf8');
    for (const match of text.matchAll(/INSERT INTO jobs\s*\(([^)]*)\)/g)) {
      found.push({ file, columns: match[1] ?? '' });
    }
  }
  return found;
}

test('every statement that inserts jobs sets jobs.github, which the outbox triggers read', () => {
  const inserts = jobInserts();
  assert.ok(inserts.length >= 2, `the enqueue and the retry insert jobs: ${JSON.stringify(inserts)}`);
  const without = inserts.filter((insert) => !/\bgithub\b/.test(insert.columns));
  assert.deepEqual(without, [], 'set github from the task key, as ENQUEUE does (left(key, 7) = github:)');
});
