import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEnd, describePid, describeWorked } from './session-report.js';
import { succession } from './succession.js';

describe('how a session and its runs ended, in words', () => {
  test('tells a clean stop from a death, a rescue, a fencing and a row that recorded no reason', () => {
    assert.deepEqual(
      [
        describeEnd({ end: 'live', endReason: null }),
        describeEnd({ end: 'ended', endReason: 'stopped' }),
        describeEnd({ end: 'ended', endReason: 'died' }),
        describeEnd({ end: 'ended', endReason: null }),
        describeEnd({ end: 'rescued', endReason: null }),
        describeEnd({ end: 'fenced', endReason: null }),
      ],
      [
        'live',
        'stopped',
        'died (process gone, host taken over)',
        'ended (reason unknown)',
        'rescued (missed heartbeats)',
        'fenced (missed heartbeats, process alive)',
      ],
    );
  });

  test('says an operator ended a session, and who when that was recorded', () => {
    assert.deepEqual(
      [
        describeEnd({ end: 'ended', endReason: 'operator', endedBy: 'alice@box' }),
        describeEnd({ end: 'ended', endReason: 'operator', endedBy: null }),
        describeEnd({ end: 'rescued', endReason: 'rescued', endedBy: null }),
      ],
      ['ended by an operator (alice@box)', 'ended by an operator (unknown)', 'rescued (missed heartbeats)'],
    );
  });

  test("an issue worked reads its run's outcome and reason when it ran one, else its claim's", () => {
    const claim = { key: 'k', epoch: 1, claimedAt: 0, releasedAt: 1 };
    const killed = { job: 7, outcome: 'requeued', reason: 'agent killed by SIGKILL' };
    assert.equal(
      describeWorked({ ...claim, outcome: 'failed', run: killed }),
      'requeued — agent killed by SIGKILL',
    );
    assert.equal(
      describeWorked({ ...claim, outcome: 'done', run: { job: 7, outcome: 'done', reason: null } }),
      'done',
    );
    assert.equal(describeWorked({ ...claim, outcome: 'released', run: null }), 'released');
    assert.equal(describeWorked({ ...claim, outcome: null, run: null }), 'held');
  });

  test("an agent's pid is its own once spawned, with the baton up that ran it", () => {
    assert.equal(describePid({ pid: 100, agentPid: 123 }), '123 (agent; baton up 100)');
    assert.equal(describePid({ pid: 100, agentPid: null }), '100');
  });

  test("a new leader's words say whether the term before died, hung or stepped down", () => {
    const before = { holder: '7', resigned: true } as const;
    assert.equal(succession(null), '');
    assert.match(
      succession({ ...before, session: 'died' }),
      /^, after session 7, which died \(its process was gone/,
    );
    assert.match(
      succession({ ...before, resigned: false, session: 'rescued' }),
      /which died or hung \(rescued/,
    );
    assert.match(
      succession({ ...before, resigned: false, session: 'live' }),
      /did not step down: its lease expired/,
    );
    assert.equal(succession({ ...before, session: 'stopped' }), ', after session 7, which stepped down');
    assert.equal(
      succession({ holder: 'leader-a', resigned: true, session: null }),
      ', after leader-a, which stepped down',
    );
  });
});
