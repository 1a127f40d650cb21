// A node:test reporter that says where a run's time went. Once every file has finished it lists
// the slowest test files, by the summed duration of their top-level tests (BATON_TEST_TIMING=all
// lists every file), and records each file's time in BATON_TEST_TIMES (dist/test-times.json, set
// by scripts/run-tests.mjs), which the next run reads to start the slowest files first. Last, it
// names every failed test with its file and the first line of its error, so that a log cut to its
// tail (CI's excerpt) still says what failed.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const SHOWN = process.env.BATON_TEST_TIMING === 'all' ? Infinity : 15;

export default async function* timing(source) {
  const files = new Map();
  const failed = [];
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details, name } = event.data;
    // A suite fails with 'subtestsFailed' when one of its tests does: name the test, not the suite.
    if (event.type === 'test:fail' && details?.error?.failureType !== 'subtestsFailed') {
      failed.push({ file, name, error: details?.error });
    }
    if (file === undefined || nesting !== 0) continue;
    const row = files.get(file) ?? { ms: 0, tests: 0 };
    row.ms += details?.duration_ms ?? 0;
    row.tests += 1;
    files.set(file, row);
  }
  const rows = [...files].sort((a, b) => b[1].ms - a[1].ms);
  // With source maps a file is named by its source (src/x.test.ts); the record names what runs.
  const shown = (file) => relative(process.cwd(), file);
  const compiled = (file) => {
    const path = shown(file);
    return path.startsWith('dist/') ? path : `dist/${path.replace(/\.ts$/, '.js')}`;
  };
  const total = rows.reduce((sum, [, r]) => sum + r.ms, 0);
  yield `# time per test file (top-level tests summed; ${(total / 1000).toFixed(0)} s over ${rows.length} files)\n`;
  for (const [file, r] of rows.slice(0, SHOWN)) {
    yield `#   ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${shown(file)} (${r.tests} tests)\n`;
  }
  if (failed.length > 0) yield `# failed: ${failed.length}\n`;
  for (const { file, name, error } of failed) {
    const cause = error?.cause ?? error;
    const line = String(cause?.message ?? cause ?? 'no error')
      .split('\n')[0]
      .slice(0, 300);
    yield `#   ${file === undefined ? '?' : shown(file)} > ${name}: ${line}\n`;
  }
  const record = process.env.BATON_TEST_TIMES;
  if (record === undefined || record === '') return;
  let times = {};
  try {
    times = JSON.parse(readFileSync(record, 'utf8'));
  } catch {
    // No record yet, or a torn one: start afresh.
  }
  for (const [file, r] of rows) times[compiled(file)] = Math.round(r.ms);
  writeFileSync(record, `${JSON.stringify(times, null, 1)}\n`);
}
