/**
 * Times leave the CLI as ISO strings by type, not by name: the fields converted are exactly those
 * the domain types declare as `Instant`, so `runAfter` comes out ISO beside `queuedAt`.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { cliModes, cliOn, repoRoot, stopServers } from '../../test/support/cli.js';
import { sqliteDatabase } from '../../test/support/databases.js';
import { declaredFieldKinds, type SourceFile } from '../../test/support/tidy-rules.js';
import { INSTANT_FIELDS, jsonText } from './output.js';

const root = repoRoot();
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function sources(dir: string, deep: boolean): SourceFile[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(root, dir, name);
    if (statSync(path).isDirectory()) return deep ? sources(relative(root, path), deep) : [];
    if (!name.endsWith('.ts') || name.endsWith('.test.ts')) return [];
    return [{ path: relative(root, path), text: readFileSync(path, 'utf8') }];
  });
}

test('converts exactly the fields the domain types declare as Instant, and none is also a plain number', () => {
  // The domain types: core, the store port (not the engines' rows), the use-case API, the CLI.
  const files = [
    ...sources('src/core', true),
    ...sources('src/store', false),
    ...sources('src/coordinator', true),
    ...sources('src/cli', true),
  ];
  const kinds = declaredFieldKinds(files);
  const declared = [...kinds].filter(([, k]) => k.has('instant')).map(([name]) => name);
  assert.deepEqual([...INSTANT_FIELDS].sort(), declared.sort(), 'INSTANT_FIELDS in output.ts');
  const ambiguous = declared.filter((name) => kinds.get(name)?.has('number') === true);
  assert.deepEqual(
    ambiguous,
    [],
    'declared Instant in one type and number in another: make them all Instant',
  );
});

test('writes Instant fields as ISO and leaves other numbers alone', () => {
  const wire = JSON.parse(
    jsonText({ runAfter: 0, attempt: 3, nested: [{ queuedAt: 1_000, at: null }] }),
  ) as unknown;
  assert.deepEqual(wire, {
    runAfter: '1970-01-01T00:00:00.000Z',
    attempt: 3,
    nested: [{ queuedAt: '1970-01-01T00:00:01.000Z', at: null }],
  });
});

/** Every Instant field found, at any depth, with the path to it; and every number that looks like one. */
function times(value: unknown, path = '$'): { fields: [string, unknown][]; epochLike: string[] } {
  const fields: [string, unknown][] = [];
  const epochLike: string[] = [];
  const walk = (v: unknown, at: string, key: string | null): void => {
    if (key !== null && INSTANT_FIELDS.has(key) && v !== null) fields.push([at, v]);
    // Any number past 1973 in milliseconds is a time that escaped conversion.
    if (typeof v === 'number' && v > 1e11) epochLike.push(`${at} = ${v}`);
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}[${i}]`, null));
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) walk(x, `${at}.${k}`, k);
    }
  };
  walk(value, path, null);
  return { fields, epochLike };
}

after(stopServers);

for (const mode of cliModes('sqlite')) {
  const isoName = 'every time field of the JSON of a task, its claim and its jobs is ISO, runAfter included';
  test(`${isoName}${mode === 'db' ? '' : ' (over HTTP)'}`, async () => {
    const t = cliOn(await sqliteDatabase().fresh(), mode);
    await t.json(0, 'task', 'add', 'k1');
    const session = await t.session();
    const outputs = {
      enqueue: await t.json(0, 'enqueue', 'k1'),
      claim: await t.json(0, 'claim', 'k1', '--session', session),
      show: await t.json(0, 'task', 'show', 'k1'),
      queue: await t.json<unknown[]>(0, 'queue', 'list'),
      job: await t.json(0, 'job', 'show', '1'),
    };
    const { fields, epochLike } = times(outputs);
    assert.deepEqual(epochLike, [], 'numbers that look like epoch milliseconds');
    for (const [at, v] of fields) assert.match(String(v), ISO, `${at} is ${JSON.stringify(v)}`);
    const names = new Set(fields.map(([at]) => at.split('.').pop()));
    for (const name of ['runAfter', 'queuedAt', 'createdAt', 'since'])
      assert.ok(names.has(name), `no ${name} seen`);
  });
}
