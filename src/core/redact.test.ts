/** Passwords out of every URL in a message, and out of the URLs Baton hands on. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hasPassword, redactSecrets, withoutPassword } from './redact.js';

describe('redaction', () => {
  test('masks the password of every URL in a text, whatever the scheme', () => {
    const text =
      'unknown scheme in postgress://baton:hunter2@db.example:5432/baton; also https://u:s3cr3t@h/x';
    const out = redactSecrets(text);
    assert.ok(!out.includes('hunter2') && !out.includes('s3cr3t'), out);
    assert.ok(out.includes('postgress://baton:***@db.example:5432/baton'));
  });

  test('masks passwords holding @, / and quotes-free punctuation, and password= parameters', () => {
    for (const secret of ['p@ss', 'a/b', 'x%40y', 'semi;colon']) {
      const out = redactSecrets(`postgres://u:${secret}@h/db?sslmode=require and password=${secret}`);
      assert.ok(!out.includes(secret), out);
    }
    assert.equal(redactSecrets("host=h password='two words' user=u"), 'host=h password=*** user=u');
    assert.equal(redactSecrets('PGPASSWORD=hunter2 baton up'), 'PGPASSWORD=*** baton up');
  });

  test('leaves text without a password alone, JSON quotes included', () => {
    const json = '{"db":"postgres://u@h/db","other":"a@b"}';
    assert.equal(redactSecrets(json), json);
    assert.equal(hasPassword('postgres://u@h/db'), false);
    assert.equal(hasPassword('postgres://u:p@h/db'), true);
    // A password with a space or a quote, which pg takes whole: still a password on argv.
    assert.equal(hasPassword('postgres://u:a b@h/db'), true);
    assert.equal(hasPassword('postgres://u:p"w@h/db'), true);
    assert.equal(hasPassword('postgres://u:@h/db'), false);
    assert.equal(hasPassword('/tmp/baton.db'), false);
  });

  test('drops the password from a URL to hand on, keeping user, host, database and options', () => {
    assert.equal(withoutPassword('postgres://baton:hunter2@db:5432/baton'), 'postgres://baton@db:5432/baton');
    assert.equal(withoutPassword('postgres://baton:p@ss@db/b'), 'postgres://baton@db/b');
    assert.equal(
      withoutPassword('postgresql://db/b?password=x&sslmode=require'),
      'postgresql://db/b?sslmode=require',
    );
    assert.equal(withoutPassword('/srv/baton/baton.db'), '/srv/baton/baton.db');
  });
});
