import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAgentUids } from './agent-uids.js';
import { InvalidInputError } from './errors.js';

const runner = { uid: 1000, gid: 1000 };

test('reads a range of agent uids, or one uid, with the first id as the agents group', () => {
  assert.deepEqual(parseAgentUids('20001-20008', runner), { first: 20001, last: 20008, gid: 20001 });
  assert.deepEqual(parseAgentUids('20001', runner), { first: 20001, last: 20001, gid: 20001 });
  assert.deepEqual(parseAgentUids(' 5 - 6 ', runner), { first: 5, last: 6, gid: 5 });
});

test('refuses a malformed range, a reversed or huge one, and ids past 2^32 - 2', () => {
  for (const text of ['', 'a-b', '5-', '-5', '8-3', '1.5', '1-2-3', '1-70000', '4294967295', '1,2'])
    assert.throws(() => parseAgentUids(text, runner), /--agent-uids must be a range A-B/, text);
});

test('refuses a range holding root or the runner, or whose group is the runner group', () => {
  assert.throws(() => parseAgentUids('0-3', runner), /holds uid 0 \(root\)/);
  assert.throws(() => parseAgentUids('999-1001', runner), /holds this runner's own uid 1000/);
  assert.throws(() => parseAgentUids('1000', { uid: 0, gid: 1000 }), /1000 is this runner's own gid/);
  assert.throws(() => parseAgentUids('0', runner), InvalidInputError);
});
