/**
 * Export and retention end to end, on both engines: `baton audit export` streams every row with
 * what `verify --file` needs offline (also filtered, also as CSV), an edited export fails offline,
 * and `baton audit prune` leaves a signed record so that verify passes over what remains and says
 * what was pruned, in the database and in an export made afterwards.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bothEngines } from '../support/databases.js';
import { cliOn } from '../support/cli.js';
import { someActivity, withLedger, type LedgerFixture } from './ledger-fixture.js';

interface Verdict {
  readonly ok: boolean;
  readonly rows: number;
  readonly firstBad: {
    readonly id: number;
    readonly problem: string;
    readonly checkpoint: number | null;
  } | null;
  readonly pruned: readonly {
    readonly firstId: number;
    readonly lastId: number;
    readonly rowCount: number;
  }[];
  readonly unchecked: number;
}

async function exportTo(f: LedgerFixture, file: string, ...args: string[]): Promise<string[]> {
  const run = await cliOn(f.url).run('audit', 'export', '--out', file, ...args);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '', 'no progress bar off a terminal');
  return readFileSync(file, 'utf8').trimEnd().split('\n');
}

for (const engine of bothEngines()) {
  void describe(`ledger export and retention on ${engine.name}`, () => {
    test('exports one JSON object per line that verifies offline, filtered or whole, JSONL or CSV', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        await f.store.tasks.add({ key: 'unsealed-one' });
        const cli = cliOn(f.url);
        const stdout = await cli.run('audit', 'export', '--format', 'jsonl');
        const lines = stdout.stdout
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as { record: string; row?: Record<string, unknown> });
        assert.deepEqual(
          [lines[0]?.record, lines[1]?.record, lines.at(-1)?.record],
          ['ledger', 'checkpoint', 'end'],
        );
        const rows = lines.filter((l) => l.record === 'row');
        assert.deepEqual(
          rows.map((r) => r.row?.['id']),
          (await f.store.audit.list()).map((e) => e.id),
        );
        const whole = join(f.dir, 'whole.jsonl');
        writeFileSync(whole, stdout.stdout);
        const v = await cli.json<Verdict>(
          0,
          'audit',
          'verify',
          '--file',
          whole,
          '--public-key',
          `ed25519:${f.signer.publicKey}`,
        );
        assert.equal(v.rows, rows.length);
        const csv = join(f.dir, 'whole.csv');
        const csvLines = await exportTo(f, csv, '--format', 'csv');
        assert.match(csvLines[0] ?? '', /^record,checkpoint,id,at,type,task_key,/);
        assert.equal((await cli.json<Verdict>(0, 'audit', 'verify', '--file', csv)).rows, rows.length);
        const one = join(f.dir, 'task.jsonl');
        await exportTo(f, one, '--format', 'jsonl', '--task', 'task-1', '--kind', 'claim:granted');
        const filtered = await cli.json<Verdict>(0, 'audit', 'verify', '--file', one, '--partial');
        assert.equal(filtered.rows, 1);
        const asWhole = await cli.json<Verdict>(1, 'audit', 'verify', '--file', one);
        assert.equal(asWhole.firstBad?.problem, 'missing', 'without --partial a file is held to being whole');
      }));

    test('an edited or cut-off export fails offline, naming the row', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        const file = join(f.dir, 'e.jsonl');
        const lines = await exportTo(f, file, '--format', 'jsonl');
        const i = lines.findIndex((l) => l.includes('"claim:released"'));
        const id = (JSON.parse(lines[i] ?? '{}') as { row: { id: number } }).row.id;
        const edited = [...lines];
        edited[i] = (lines[i] ?? '').replace(/done|failed/, 'released');
        writeFileSync(file, `${edited.join('\n')}\n`);
        const v = await cliOn(f.url).json<Verdict>(1, 'audit', 'verify', '--file', file);
        assert.deepEqual(v.firstBad && [v.firstBad.id, v.firstBad.problem], [id, 'edited']);
        // A header edited to say "filtered" hides no deleted row: nothing signs the header.
        const header = (lines[0] ?? '').replace('"complete":true', '"complete":false');
        assert.notEqual(header, lines[0]);
        const sealedRow = lines.findIndex((l) => l.startsWith('{"record":"row","checkpoint":1,'));
        const end = JSON.parse(lines.at(-1) ?? '{}') as { rows: number };
        const fewer = [header, ...lines.slice(1, -1).filter((_, at) => at + 1 !== sealedRow)];
        fewer.push(JSON.stringify({ ...end, rows: end.rows - 1 }));
        writeFileSync(file, `${fewer.join('\n')}\n`);
        const hidden = await cliOn(f.url).json<Verdict>(1, 'audit', 'verify', '--file', file);
        assert.equal(hidden.firstBad?.problem, 'missing');
        // A seal stripped of its leaves hides what it sealed: refused, not counted as unchecked.
        const stripped = lines.map((l) =>
          l.includes('"leaves":"') ? l.replace(/"leaves":"[^"]*"/, '"leaves":null') : l,
        );
        writeFileSync(file, `${stripped.join('\n')}\n`);
        const noLeaves = await cliOn(f.url).run('audit', 'verify', '--file', file);
        assert.equal(noLeaves.code, 1, noLeaves.stdout);
        assert.match(noLeaves.stdout, /carries no leaves/);
        writeFileSync(file, `${lines.slice(0, -4).join('\n')}\n`);
        const cut = await cliOn(f.url).run('audit', 'verify', '--file', file);
        assert.equal(cut.code, 2);
        assert.match(cut.stderr, /cut off/);
      }));

    test('a --file that cannot be read, or an --out that cannot be written, is one line and exit 2', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        const cli = cliOn(f.url);
        const file = join(f.dir, 'a-file');
        writeFileSync(file, '');
        const long = join(f.dir, 'x'.repeat(300));
        const refusals: [string[], RegExp][] = [
          [
            ['verify', '--file', join(f.dir, 'absent.jsonl')],
            /absent\.jsonl cannot be read: it does not exist/,
          ],
          [['verify', '--file', f.dir], /cannot be read: it is a folder/],
          [['export', '--format', 'jsonl', '--out', join(f.dir, 'no', 'x.jsonl')], /folder does not exist/],
          [['export', '--format', 'csv', '--out', f.dir], /cannot be written: it is a folder/],
          // Neither missing nor a folder: a file where a folder should be, a name past NAME_MAX.
          [
            ['verify', '--file', join(file, 'x')],
            /cannot be read: a part of its path is a file, not a folder/,
          ],
          [
            ['export', '--format', 'jsonl', '--out', join(file, 'x')],
            /written: a part of its path is a file/,
          ],
          [['verify', '--file', long], /cannot be read: its name is too long for the file system —/],
          [['export', '--format', 'csv', '--out', long], /cannot be written: its name is too long/],
        ];
        for (const [args, said] of refusals) {
          const run = await cli.run('audit', ...args);
          assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
          assert.match(run.stderr, said);
          assert.equal(run.stderr.trimEnd().split('\n').length, 1, run.stderr);
          assert.doesNotMatch(run.stderr, /\b(ENOENT|EISDIR|ENOTDIR|ENAMETOOLONG)\b|BATON_DEBUG/);
        }
      }));

    test('a CSV whose spreadsheet cells say other than its json cell fails offline, naming the row', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        const file = join(f.dir, 'e.csv');
        const lines = await exportTo(f, file, '--format', 'csv');
        assert.equal((await cliOn(f.url).json<Verdict>(0, 'audit', 'verify', '--file', file)).ok, true);
        const i = lines.findIndex((l) => l.startsWith('row,1,') && l.includes(',task-2,'));
        const id = Number((lines[i] ?? '').split(',')[2]);
        const detailAt = lines.findIndex(
          (l) => l.startsWith('row,1,') && l.includes('""outcome"":""failed""'),
        );
        const checkpointAt = lines.findIndex((l) => l.startsWith('checkpoint,1,'));
        for (const [at, edit, column] of [
          [i, (l: string) => l.replace(',task-2,', ',task-3,'), 'task_key'],
          [detailAt, (l: string) => l.replace('""outcome"":""failed""', '""outcome"":""done""'), 'detail'],
          [checkpointAt, (l: string) => l.replace(/^checkpoint,1,\d+,/, 'checkpoint,1,1,'), 'id'],
        ] as const) {
          const edited = [...lines];
          edited[at] = edit(lines[at] ?? '');
          assert.notEqual(edited[at], lines[at], column);
          writeFileSync(file, `${edited.join('\n')}\n`);
          const run = await cliOn(f.url).run('--json', 'audit', 'verify', '--file', file);
          assert.equal(run.code, 1, `${column}: ${run.stdout}`);
          const v = JSON.parse(run.stdout) as Verdict & { problems: { detail: string }[] };
          assert.equal(v.firstBad?.problem, 'edited', column);
          if (column === 'task_key') assert.equal(v.firstBad?.id, id);
          assert.match(v.problems[0]?.detail ?? '', new RegExp(`:${at + 1}: its ${column} cell shows `));
        }
      }));

    test('prunes old checkpoints behind a signed record: verify passes and reports the pruned range, offline too', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store, 'old');
        const [old] = (await f.baton.ledger.seal(f.signer)).sealed;
        assert.ok(old !== undefined);
        await sleep(20);
        const cut = await f.store.now();
        await sleep(20);
        await someActivity(f.store, 'new');
        await f.baton.ledger.seal(f.signer);
        const cli = cliOn(f.url);
        const anchors = join(f.dir, 'anchors.jsonl');
        const pruned = await cli.json<{ removed: number }>(
          0,
          'audit',
          'prune',
          '--before',
          new Date(cut).toISOString(),
          '--key-file',
          f.keyFile,
          '--anchor',
          anchors,
        );
        assert.equal(pruned.removed, old.rowCount);
        const left = await f.store.audit.list();
        assert.ok(left.every((e) => e.id > old.lastId));
        assert.equal(left.at(-1)?.type, 'ledger:pruned');
        const v = await cli.json<Verdict>(0, 'audit', 'verify', '--anchor', anchors);
        assert.deepEqual(
          v.pruned.map((p) => [p.firstId, p.lastId, p.rowCount]),
          [[1, old.lastId, old.rowCount]],
        );
        await f.baton.ledger.seal(f.signer);
        const file = join(f.dir, 'after.jsonl');
        await exportTo(f, file, '--format', 'jsonl');
        const offline = await cli.json<Verdict>(0, 'audit', 'verify', '--file', file);
        assert.equal(offline.pruned.length, 1);
        // A pruned row put back is not ledger history: it is reported, not read as pruned.
        await f.attacker.unguard();
        await f.attacker.exec(
          `INSERT INTO audit_events (id, at, type, detail)
           SELECT 1, at, 'task:added', '{}' FROM audit_events WHERE id = ${f.attacker.p(1)}`,
          [left[0]?.id],
        );
        const back = await cli.json<Verdict>(1, 'audit', 'verify');
        assert.deepEqual(back.firstBad && [back.firstBad.id, back.firstBad.problem], [1, 'inserted']);
      }));

    test('verify tells a ledger never sealed from one whose sealed rows retention pruned every one of', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        const cli = cliOn(f.url);
        const verified = async (): Promise<{ head: string; unsealed: number }> => {
          const run = await cli.run('audit', 'verify');
          assert.equal(run.code, 0, run.stderr);
          const v = await cli.json<{ unsealed: { count: number } }>(0, 'audit', 'verify');
          return { head: run.stdout.split('\n')[0] ?? '', unsealed: v.unsealed.count };
        };
        assert.match((await verified()).head, /^ledger not sealed: (1 row|(?!1 )\d+ rows) and no checkpoint/);
        const sealed = await cli.run('audit', 'seal', '--key-file', f.keyFile);
        assert.equal(sealed.code, 0, sealed.stderr);
        type Pruned = { removed: number; records: { seq: number; firstId: number; lastId: number }[] };
        const pruned = await cli.json<Pruned>(
          0,
          'audit',
          'prune',
          '--before',
          '2999-01-01',
          '--key-file',
          f.keyFile,
        );
        const record = pruned.records.at(-1);
        assert.ok(record !== undefined && pruned.records.length === 1 && pruned.removed > 0);
        const after = await verified();
        assert.ok(after.unsealed > 0, 'the prune wrote its own row, not sealed yet');
        const since = after.unsealed === 1 ? 'the 1 row since has' : `the ${after.unsealed} rows since have`;
        assert.equal(
          after.head,
          `ledger pruned, not sealed since: retention removed every sealed row (ids 1..${record.lastId}, ` +
            `prune record ${record.seq} the last) and ${since} no checkpoint yet, so no row was ` +
            'verified — `baton audit seal` with the ledger key seals them, as does a `baton up` that ' +
            'can lead with it',
        );
        // An export of it: sealing means sealing the database, then exporting again.
        const file = join(f.dir, 'pruned.jsonl');
        await exportTo(f, file, '--format', 'jsonl');
        const offline = await cli.run('audit', 'verify', '--file', file);
        assert.equal(offline.code, 0, offline.stderr);
        assert.match(
          offline.stdout.split('\n')[0] ?? '',
          /so no row was verified — seal the database \(`baton audit seal` with the ledger key\) and export it again$/,
        );
        assert.equal((await cli.run('audit', 'seal', '--key-file', f.keyFile)).code, 0);
        assert.match((await verified()).head, /^ledger intact: 1 row, 1 checkpoint\(s\), sealed through row/);
      }));

    test('refuses to prune a ledger that does not verify, and changes nothing', () =>
      withLedger(engine, async (f) => {
        await someActivity(f.store);
        await f.baton.ledger.seal(f.signer);
        await f.attacker.unguard();
        await f.attacker.exec(`DELETE FROM audit_events WHERE id = 3`);
        const before = (await f.store.audit.list()).length;
        const run = await cliOn(f.url).run(
          'audit',
          'prune',
          '--before',
          '2999-01-01',
          '--key-file',
          f.keyFile,
        );
        assert.equal(run.code, 3);
        assert.match(run.stderr, /does not verify/);
        assert.equal((await f.store.audit.list()).length, before);
      }));
  });
}
