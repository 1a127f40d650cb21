import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diskLow } from './disk.js';

test('a disk is low under 1 GB free, or under 5% of its size free', () => {
  assert.equal(diskLow(900, 10_000), true);
  assert.equal(diskLow(2000, 100_000), true);
  assert.equal(diskLow(6000, 100_000), false);
  assert.equal(diskLow(1024, 2000), false);
});
