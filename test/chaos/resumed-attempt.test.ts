/**
 * The nemesis's reading of a resumed worker's history (history.ts resumedAttempt): what the
 * worker did first under its rescued session once the pause was lifted, if anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resumedAttempt, type HistoryLine } from './history.js';

const PID = 41;
const SESSION = 7;
const RESUMED = 1_000;

function line(t: number, n: number, op: string, phase: HistoryLine['phase'], fields = {}): HistoryLine {
  return { t, p: 'worker-1', pid: PID, n, op, phase, ...fields };
}

test('the first attempt invoked after the resume under the old session is what the worker did', () => {
  const s = { session: SESSION };
  const cases: { name: string; lines: HistoryLine[]; want: string | null }[] = [
    {
      name: 'refused as fenced',
      lines: [
        line(RESUMED + 5, 9, 'heartbeat', 'invoke', s),
        line(RESUMED + 9, 9, 'heartbeat', 'fail', { ...s, reason: 'fenced' }),
      ],
      want: 'heartbeat fail',
    },
    {
      name: 'the in-flight request answered first does not count; the next one does',
      lines: [
        line(RESUMED - 4000, 8, 'effect', 'invoke', s),
        line(RESUMED + 2, 8, 'effect', 'ok', s),
        line(RESUMED + 60, 9, 'release', 'invoke', s),
        line(RESUMED + 70, 9, 'release', 'fail', { ...s, reason: 'fenced' }),
      ],
      want: 'release fail',
    },
    {
      name: 'the in-flight request timed out: an unknown outcome, the worker exits',
      lines: [line(RESUMED - 4000, 8, 'lock', 'invoke', s), line(RESUMED + 1, 8, 'lock', 'info', s)],
      want: 'lock info',
    },
    {
      name: 'nothing yet',
      lines: [line(RESUMED - 4000, 8, 'effect', 'invoke', s), line(RESUMED + 3, 9, 'claim', 'invoke', s)],
      want: null,
    },
    {
      name: 'another process, or another session, is not this worker resuming',
      lines: [
        { ...line(RESUMED + 3, 9, 'claim', 'invoke', s), pid: 99 },
        { ...line(RESUMED + 4, 9, 'claim', 'fail', { ...s, reason: 'fenced' }), pid: 99 },
        line(RESUMED + 5, 10, 'claim', 'invoke', { session: 8 }),
        line(RESUMED + 6, 10, 'claim', 'ok', { session: 8 }),
      ],
      want: null,
    },
  ];
  for (const c of cases) {
    const got = resumedAttempt(c.lines, PID, SESSION, RESUMED);
    assert.equal(got === null ? null : `${got.op} ${got.phase}`, c.want, c.name);
  }
});
