import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileErrorInWords } from './file-errors.js';

const failure = (code: string, words: string): Error =>
  Object.assign(new Error(`${code}: ${words}, open '/x/y'`), { code });

test('says why a file cannot be opened in words, never a bare errno code', () => {
  const said = (code: string, words: string): string => fileErrorInWords(failure(code, words), 'it is gone');
  assert.equal(said('ENOENT', 'no such file or directory'), 'it is gone');
  assert.equal(said('EACCES', 'permission denied'), 'permission denied');
  assert.equal(said('EROFS', 'read-only file system'), 'the file system is read-only');
  assert.equal(said('ENOTDIR', 'not a directory'), 'a part of its path is a file, not a folder');
  // A code without words of our own keeps the system's, with the code to search for.
  assert.equal(said('EXDEV', 'cross-device link not permitted'), 'cross-device link not permitted (EXDEV)');
  assert.equal(
    fileErrorInWords(Object.assign(new Error(''), { code: 'EWHAT' }), ''),
    'the system refused it (EWHAT)',
  );
});
