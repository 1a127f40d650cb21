/**
 * Random garbage into the store port and into the `baton` command line. Whatever is refused must
 * change nothing: a dump of every table is the same before and after. The CLI must answer
 * garbage with a documented refusal (2 bad input, 3 conflict, 4 not found), never exit 1.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { COMMANDS } from '../../src/cli/command-table.js';
import { runCli } from '../../src/cli/run-cli.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { bothEngines, type TestDatabase } from '../support/databases.js';
import { rawSql, type RawSql } from '../support/raw-sql.js';

/** Every table, every row, as one string. */
async function dump(raw: RawSql, engine: TestDatabase['engine']): Promise<string> {
  const list =
    engine === 'sqlite'
      ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
      : "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename";
  const tables = (await raw.exec(list)).map((r) => String(r['name']));
  const parts: string[] = [];
  for (const t of tables) parts.push(t, JSON.stringify(await raw.exec(`SELECT * FROM ${t} ORDER BY 1`)));
  return parts.join('\n');
}

/** A value a caller might send by mistake, or on purpose: sometimes valid, mostly not. */
const junk = fc.oneof(
  fc.constantFrom('k0', 'k1', 1, 2, '1', 0, -1, 'done', 'write', '{}', null, undefined, true, ''),
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.string({ minLength: 190, maxLength: 600 }),
  fc.anything({ maxDepth: 2 }),
);

type Call = (store: Store) => Promise<unknown>;
const calls: fc.Arbitrary<[string, Call]>[] = [
  fc
    .tuple(junk, junk, junk)
    .map(([key, title, priority]) => [
      'tasks.add',
      (s: Store) => s.tasks.add({ key, title, priority } as never),
    ]),
  fc
    .tuple(junk, junk, junk)
    .map(([kind, host, pid]) => [
      'sessions.start',
      (s: Store) => s.sessions.start({ kind, host, pid } as never),
    ]),
  fc
    .tuple(junk, junk, junk)
    .map(([session, key, epoch]) => [
      'sessions.heartbeat',
      (s: Store) => s.sessions.heartbeat({ session, claim: { key, epoch } } as never),
    ]),
  fc
    .tuple(junk, junk)
    .map(([key, session]) => ['claims.acquire', (s: Store) => s.claims.acquire({ key, session } as never)]),
  fc
    .tuple(junk, junk, junk, junk)
    .map(([key, session, epoch, outcome]) => [
      'claims.release',
      (s: Store) => s.claims.release({ key, session, epoch, outcome } as never),
    ]),
  fc
    .tuple(junk, junk, junk, junk, junk)
    .map(([key, session, epoch, kind, payload]) => [
      'effects.record',
      (s: Store) => s.effects.record({ key, session, epoch, kind, payload } as never),
    ]),
  fc
    .tuple(junk, junk, junk, junk)
    .map(([key, priority, ramMb, command]) => [
      'jobs.enqueue',
      (s: Store) => s.jobs.enqueue({ key, priority, ramMb, command } as never),
    ]),
  fc
    .tuple(junk, junk, junk, junk)
    .map(([id, session, epoch, status]) => [
      'jobs.finish',
      (s: Store) => s.jobs.finish({ id, session, epoch, status } as never),
    ]),
  fc
    .tuple(junk, junk, junk)
    .map(([name, holder, ttlMs]) => [
      'leases.acquire',
      (s: Store) => s.leases.acquire({ name, holder, ttlMs } as never),
    ]),
];

/** Command-line words: valid ones, numbers in odd spellings, unicode, JSON-ish, no NUL (argv cannot hold one). */
const word = fc.oneof(
  fc.constantFrom('k0', 'k1', '1', '2', '0', '-1', '1e3', '99999999999999999999'),
  fc.constantFrom('done', 'write', '{}', '{"a":1}', '""', ''),
  fc.string().map((x) => x.replace(/\0/g, '')),
  fc.string({ minLength: 190, maxLength: 5000 }).map((x) => x.replace(/\0/g, '')),
);
const argvs: fc.Arbitrary<string[]> = fc.oneof(
  fc.tuple(word, word, word).map(([k, p, t]) => ['task', 'add', k, '--priority', p, '--title', t]),
  fc.tuple(word, word).map(([k, s]) => ['claim', k, '--session', s]),
  fc
    .tuple(word, word, word, word)
    .map(([k, s, e, o]) => ['release', k, '--session', s, '--epoch', e, '--outcome', o]),
  fc.tuple(word, word, word).map(([s, k, e]) => ['heartbeat', s, '--key', k, '--epoch', e]),
  fc
    .tuple(word, word, word, word, word)
    .map(([k, s, e, kind, p]) => [
      ...['effect', k, '--session', s, '--epoch', e],
      ...['--kind', kind, '--payload', p],
    ]),
  fc
    .tuple(word, word, word, word)
    .map(([k, p, r, c]) => [...['enqueue', k, '--priority', p], ...['--ram-mb', r, '--command', c]]),
  fc.tuple(word, word).map(([kind, host]) => ['session', 'start', '--kind', kind, '--host', host]),
  fc.tuple(word).map(([id]) => ['session', 'end', id]),
  fc.tuple(word).map(([id]) => ['cancel', id]),
  fc.tuple(word).map(([id]) => ['retry', id]),
  fc.array(word, { maxLength: 4 }).map((w) => ['audit', '--task', ...w]),
);

/** Runs the CLI in this process with its output swallowed; returns the exit code. */
async function quietCli(args: readonly string[]): Promise<number> {
  const [out, err] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
  process.stdout.write = () => true;
  process.stderr.write = () => true;
  try {
    return await runCli(['node', 'baton', ...args], COMMANDS);
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

async function seeded(db: TestDatabase): Promise<{ url: string; store: Store; raw: RawSql }> {
  const url = await db.fresh();
  const store = await openStore(url);
  for (const key of ['k0', 'k1']) await store.tasks.add({ key });
  const s = await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
  await store.claims.acquire({ key: 'k0', session: s.id });
  await store.jobs.enqueue({ key: 'k1' });
  return { url, store, raw: await rawSql(db, url) };
}

for (const db of bothEngines()) {
  describe(`${db.name}: garbage in`, () => {
    test('a store call refused for its input changes no table', async () => {
      const { store, raw } = await seeded(db);
      try {
        await fc.assert(
          fc.asyncProperty(fc.oneof(...calls), async ([name, call]) => {
            const before = await dump(raw, db.engine);
            const refused = await call(store).then(
              () => false,
              () => true,
            );
            if (refused)
              assert.equal(await dump(raw, db.engine), before, `${name} was refused but changed something`);
          }),
          { seed: 20261129, numRuns: 200 },
        );
      } finally {
        await raw.close();
        await store.close();
      }
    });

    test('the CLI answers garbage with 0, 2, 3 or 4 (never 1), and a refusal changes no table', async () => {
      const { url, store, raw } = await seeded(db);
      try {
        await fc.assert(
          fc.asyncProperty(argvs, async (args) => {
            const before = await dump(raw, db.engine);
            const code = await quietCli(['--db', url, ...args]);
            assert.ok([0, 2, 3, 4].includes(code), `exit ${code} for ${JSON.stringify(args)}`);
            const changed = `exit ${code} but changed: ${JSON.stringify(args)}`;
            if (code !== 0) assert.equal(await dump(raw, db.engine), before, changed);
          }),
          { seed: 20261129, numRuns: 120 },
        );
      } finally {
        await raw.close();
        await store.close();
      }
    });
  });
}
