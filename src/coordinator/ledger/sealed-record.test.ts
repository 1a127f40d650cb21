import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { SealedRecord } from './sealed-record.js';

test('a record is named by the database as its operator names it, not by how the URL is spelled', () => {
  const key = join(mkdtempSync(join(tmpdir(), 'baton-record-')), 'ledger.key');
  const at = (database: string): string => SealedRecord.of(key, database).path;
  const db = join(tmpdir(), 'some', 'baton.db');
  assert.equal(at(db), at(relative(process.cwd(), db)), 'a relative path is the same file');
  assert.equal(at(db), at(`sqlite:${db}`));
  assert.equal(at(db), at(`file://${db}`));
  assert.notEqual(at(db), at(join(tmpdir(), 'other.db')));
  const pg = at('postgres://baton:secret@DB.example:5432/baton');
  assert.equal(
    pg,
    at('postgresql://auditor@db.example/baton?sslmode=verify-full'),
    'user, password, options',
  );
  assert.notEqual(pg, at('postgres://baton@db.example:5433/baton'), 'another server');
  assert.notEqual(pg, at('postgres://baton@db.example:5432/baton_test'), 'another database');
  assert.notEqual(pg, at(`sqlite:${db}`));
  const socket = at('postgres://baton@/baton?host=/var/run/postgresql');
  assert.equal(
    socket,
    at('postgresql:///baton?host=/var/run/postgresql&user=other'),
    'a socket, however spelled',
  );
  assert.notEqual(socket, pg);
  assert.notEqual(at('postgres://a:5432,b:5433/baton'), at('postgres://a:5432/baton'), 'several hosts');
  assert.equal(at('postgres://[::1]/baton'), at('postgres://u@[::1]:5432/baton'));
  assert.ok(pg.startsWith(`${key}.sealed/`) && pg.endsWith('.json'), pg);
});
