import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ACTIONS, SCOPE_ACTIONS, authorize } from './token.js';

const agent = { scope: 'agent', session: 3, host: null } as const;
const host = { scope: 'host', session: null, host: 'box-1' } as const;
const viewer = { scope: 'viewer', session: null, host: null } as const;
const operator = { scope: 'operator', session: null, host: null } as const;

test('an agent token acts only for its own session, and only within its actions', () => {
  assert.deepEqual(authorize(agent, 'claim', { session: 3 }), { ok: true });
  assert.equal(authorize(agent, 'claim', { session: 4 }).ok, false);
  assert.equal(authorize(agent, 'release', {}).ok, false, 'a target with no session is not its own');
  assert.equal(authorize(agent, 'job:cancel', { session: 3 }).ok, false);
  assert.equal(authorize(agent, 'force-release', { session: 3 }).ok, false);
  assert.deepEqual(authorize(agent, 'read'), { ok: true });
  assert.deepEqual(authorize(agent, 'task:add'), { ok: false, reason: 'an agent token may not add tasks' });
  assert.deepEqual(authorize(host, 'task:add'), { ok: false, reason: 'a host token may not add tasks' });
});

test("a run's agent token acts on its run's task alone and takes no other", () => {
  const run = { ...agent, task: 'k' };
  for (const action of ['claim', 'heartbeat', 'release', 'effect:record', 'escalate'] as const) {
    assert.deepEqual(authorize(run, action, { session: 3, key: 'k' }), { ok: true }, action);
    assert.equal(authorize(run, action, { session: 3, key: 'other' }).ok, false, action);
    assert.equal(
      authorize(run, action, { session: 3, key: 'K' }).ok,
      false,
      `${action}: keys differ by case`,
    );
    assert.deepEqual(authorize(agent, action, { session: 3, key: 'other' }), { ok: true }, 'no run: any key');
  }
  assert.deepEqual(authorize(run, 'heartbeat', { session: 3 }), { ok: true }, "its session's heartbeat");
  assert.deepEqual(authorize(run, 'progress:mark', { session: 3 }), { ok: true });
  assert.equal(authorize(run, 'next', { session: 3 }).ok, false);
  assert.deepEqual(authorize(agent, 'next', { session: 3 }), { ok: true });
  assert.equal(authorize(run, 'claim', { session: 4, key: 'k' }).ok, false, 'its own task, another session');
});

test("a run's agent token reaches its task in either spelling of an accent, and no look-alike", () => {
  const run = { ...agent, task: 'caf\u00e9' };
  assert.deepEqual(authorize(run, 'claim', { session: 3, key: 'cafe\u0301' }), { ok: true }, 'e + U+0301');
  // A run bound to a key stored decomposed (before keys were NFC) does not reach its NFC twin,
  // which may be another task (baton doctor's keys check fails such a pair).
  const old = { ...agent, task: 'cafe\u0301' };
  assert.equal(authorize(old, 'release', { session: 3, key: 'caf\u00e9' }).ok, false, 'no twin');
  assert.equal(authorize(old, 'release', { session: 3, key: 'cafe\u0301' }).ok, false, 'asked keys are NFC');
  assert.equal(authorize(run, 'claim', { session: 3, key: 'cafe' }).ok, false, 'no accent');
  assert.equal(authorize(run, 'claim', { session: 3, key: 'caf\u00e8' }).ok, false, 'another accent');
});

test('a host token acts only for its own host', () => {
  assert.deepEqual(authorize(host, 'session:start', { host: 'box-1' }), { ok: true });
  assert.equal(authorize(host, 'session:start', { host: 'box-2' }).ok, false);
  assert.equal(authorize(host, 'claim', { host: 'box-1' }).ok, false);
  const umlaut = { ...host, host: 'b\u00f6x' }; // bound as validateName stores it, in NFC
  assert.deepEqual(
    authorize(umlaut, 'session:start', { host: 'bo\u0308x' }),
    { ok: true },
    'either spelling',
  );
});

test('a viewer changes nothing and an operator may do everything', () => {
  for (const action of ACTIONS) {
    const reads = action === 'read' || action === 'job:log';
    assert.equal(authorize(viewer, action, { session: 1, host: 'h' }).ok, reads, action);
    assert.deepEqual(authorize(operator, action), { ok: true }, action);
  }
  assert.deepEqual(SCOPE_ACTIONS.viewer, ['read', 'job:log']);
});

test("an agent token reads its own job's output alone; a host token reads none", () => {
  const run = { ...agent, task: 'k1' };
  assert.deepEqual(authorize(run, 'job:log', { session: agent.session, key: 'k1' }), { ok: true });
  assert.equal(authorize(run, 'job:log', { session: 99, key: 'k2' }).ok, false);
  // Said by its run's rule, not as a session mismatch ("bound to session 3, not 99").
  const fix = 'work on k1 alone: finish it, or escalate it; other tasks get runs of their own';
  const reason =
    'this agent token is bound to its run on k1 (session 3): it acts on that task and its job alone';
  assert.deepEqual(authorize(run, 'job:log', { session: 99, key: 'k2' }), { ok: false, reason, fix });
  assert.deepEqual(authorize(run, 'next', {}), { ok: false, reason, fix }, 'next with no session named');
  assert.equal(authorize(run, 'job:log', { session: agent.session, key: 'k2' }).ok, false);
  assert.deepEqual(authorize(host, 'job:log', { host: 'box-1' }), {
    ok: false,
    reason: "a host token may not read a job's output",
  });
});

test('a refusal names the action in words, never by its scope name (0059)', () => {
  assert.deepEqual(authorize(viewer, 'lifecycle'), {
    ok: false,
    reason: "a viewer token may not change a task's state, gate or dependencies",
  });
  for (const action of ACTIONS) {
    if (SCOPE_ACTIONS.viewer.includes(action)) continue;
    const verdict = authorize(viewer, action);
    assert.ok(!verdict.ok, action);
    assert.match(verdict.reason, /^a viewer token may not [a-z][a-z ,'-]+$/, action);
    assert.doesNotMatch(verdict.reason, /:/, `${action}: no scope name`);
  }
});
