/** The password file, read as libpq reads it, and a real connection that takes its password from it. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { withoutPassword } from '../../core/redact.js';
import { lookUpPassword, passwordFromPassfile } from './pgpass.js';
import { openStore } from '../open.js';
import { repoRoot } from '../../../test/support/cli.js';

const target = { host: 'db.example', port: 5432, database: 'baton', user: 'runner' };

describe('the password file', () => {
  test('takes the first matching line, with * wildcards and \\: escapes, and skips comments', () => {
    const text = [
      '# comment',
      'other:5432:baton:runner:wrong',
      'db.example:5432:*:runner:pa\\:ss\\\\word',
      '*:*:*:*:fallback',
    ].join('\n');
    assert.equal(passwordFromPassfile(text, target), 'pa:ss\\word');
    assert.equal(passwordFromPassfile(text, { ...target, user: 'else' }), 'fallback');
    assert.equal(passwordFromPassfile('h:1:d:u:p', target), null);
  });

  test('matches a Unix socket as localhost', () => {
    assert.equal(
      passwordFromPassfile('localhost:5432:*:*:sock', { ...target, host: '/var/run/postgresql' }),
      'sock',
    );
  });

  test('ignores a file that others may read, saying why', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-pgpass-'));
    const file = join(dir, 'pgpass');
    writeFileSync(file, '*:*:*:*:secret\n', { mode: 0o644 });
    const warnings: string[] = [];
    const before = process.env['PGPASSFILE'];
    process.env['PGPASSFILE'] = file;
    try {
      assert.equal(
        lookUpPassword(target, (w) => warnings.push(w)),
        null,
      );
      assert.match(warnings[0] ?? '', /group or world access/);
      writeFileSync(join(dir, 'private'), '*:*:*:*:secret\n', { mode: 0o600 });
      process.env['PGPASSFILE'] = join(dir, 'private');
      assert.equal(
        lookUpPassword(target, () => undefined),
        'secret',
      );
    } finally {
      if (before === undefined) delete process.env['PGPASSFILE'];
      else process.env['PGPASSFILE'] = before;
    }
  });

  test('a URL without a password connects with the password from PGPASSFILE', async () => {
    const url = await freshPostgresUrl();
    const u = new URL(url);
    const dir = mkdtempSync(join(tmpdir(), 'baton-pgpass-'));
    const file = join(dir, 'pgpass');
    writeFileSync(file, `${u.hostname}:${u.port}:*:${u.username}:${decodeURIComponent(u.password)}\n`, {
      mode: 0o600,
    });
    const before = process.env['PGPASSFILE'];
    process.env['PGPASSFILE'] = file;
    try {
      const store = await openStore(withoutPassword(url));
      assert.ok((await store.now()) > 0);
      await store.close();
    } finally {
      if (before === undefined) delete process.env['PGPASSFILE'];
      else process.env['PGPASSFILE'] = before;
    }
  });

  test('a URL with no password, none in PGPASSWORD or the password file: one line, exit 5, at once', async () => {
    const url = withoutPassword(await freshPostgresUrl());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PGPASSFILE: join(mkdtempSync(join(tmpdir(), 'baton-pgpass-')), 'none'),
    };
    delete env['PGPASSWORD'];
    // pg left the socket open after its own SCRAM failure, and every command hung after its error line.
    const result = await new Promise<{ code: number | string | null; stderr: string }>((done) => {
      execFile(
        process.execPath,
        [join(repoRoot(), 'bin/baton.js'), '--db', url, 'status'],
        { env, timeout: 30_000 },
        (error, _stdout, stderr) =>
          done({ code: error === null ? 0 : (error.code ?? error.signal ?? null), stderr }),
      );
    });
    assert.equal(result.code, 5, result.stderr);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /password/);
  });
});
